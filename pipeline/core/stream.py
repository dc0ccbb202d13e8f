"""The explanations of one stream's model, in-process: explain with h_t, then learn."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from . import kernels
from .base import Component, check_positive_int
from .change.inputs import InputFault, InputMonitor
from .change.label_watch import LabelWatch
from .increments import Block, IncrementTracker
from .model import ModelFunction, fresh_copy
from .rng import derive_seed

__all__ = ["ExplainerSpec", "StreamExplainer", "ExplanationValue", "units_of_group", "ISAGE_UNIT", "NEEDS_LABEL",
           "STEPS"]

ISAGE_UNIT = "*isage*"
EXPLAINER_NAMES = ("ipfi", "isage", "ipdp")
#: whether an explainer needs the event's label: iPFI and iSAGE score a loss, iPDP does not
NEEDS_LABEL = {"ipfi": True, "isage": True, "ipdp": False}
#: the steps of an event: at its arrival, when its label comes, or both at once
STEPS = ("predict", "learn", "both")


@dataclass(frozen=True)
class ExplainerSpec:
    """Which explainer, which model output it explains, with which loss, and its parameters.

    A ``StreamExplainer`` builds one explainer per spec, on a ``ModelFunction`` of its current
    model with this ``output`` and ``target_class``. A parameter that applies to other explainers
    only must keep its default (``APPLIES_TO``); ``output``, ``loss`` and ``removal`` are checked
    when the explainer is built, the rest here.

    Parameters
    ----------
    name
        The explainer: ``"ipfi"``, ``"isage"`` or ``"ipdp"``.
    output
        The model output explained: ``"label"``, ``"value"``, ``"proba"`` or ``"proba_of"``
        (``ModelFunction``'s ``output``).
    loss
        The loss iPFI and iSAGE score: a name from ``streamxai.core.losses.LOSSES`` or
        ``loss(y_true, y_pred) -> float``. iPDP scores no loss and does not use it.
    target_class
        The class whose probability ``output="proba_of"`` explains.
    alpha
        Smoothing parameter of every explainer's exponential smoothing, in ``(0, 1]``.
    storage_size
        Earlier events stored: the size of the reservoir the removal samples from (iPFI;
        iSAGE, per leaf for the observational removal), or of iPDP's frequency storages.
    n_inner_samples
        iSAGE only: ``m``, the draws of the removed features per coalition.
    removal
        iSAGE only: ``"interventional"`` (marginal) or ``"observational"`` (conditional).
    grid_size
        iPDP only: grid points per numeric feature; the most frequent categories kept per
        categorical one.
    categorical
        iSAGE and iPDP: the categorical features (kept as a tuple); ``None``: the stream's.

    Examples
    --------
    >>> ExplainerSpec("ipdp", output="value", loss=None, grid_size=5).grid_size
    5
    >>> ExplainerSpec("ipfi", grid_size=5)
    Traceback (most recent call last):
    ...
    ValueError: grid_size=5 applies to ipdp, not to ipfi
    >>> ExplainerSpec("isage", storage_size=0)
    Traceback (most recent call last):
    ...
    ValueError: storage_size=0 must be a positive int
    """

    name: str
    output: str = "label"
    loss: Any = "zero_one"
    target_class: Any = None
    alpha: float = 0.001
    storage_size: int = 100
    n_inner_samples: int = 2
    removal: str = "interventional"
    grid_size: int = 10
    categorical: tuple[str, ...] | None = None

    #: the explainers each parameter applies to (others must keep its default)
    APPLIES_TO: ClassVar[dict[str, tuple[str, ...]]] = {
        "n_inner_samples": ("isage",), "removal": ("isage",), "grid_size": ("ipdp",),
        "categorical": ("isage", "ipdp"),
    }

    def __post_init__(self) -> None:
        if self.name not in EXPLAINER_NAMES:
            raise ValueError(f"explainer {self.name!r} is not one of {EXPLAINER_NAMES}")
        a = self.alpha
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0.0 < a <= 1.0:
            raise ValueError(f"alpha={a!r} must be a number in (0, 1]")
        for name in ("storage_size", "n_inner_samples", "grid_size"):
            check_positive_int(getattr(self, name), name)
        if self.categorical is not None:
            if isinstance(self.categorical, str) or not all(isinstance(c, str) for c in self.categorical):
                raise TypeError(f"categorical={self.categorical!r} must be a sequence of feature names")
            object.__setattr__(self, "categorical", tuple(self.categorical))
        defaults = {f.name: f.default for f in fields(self)}
        for name, names in self.APPLIES_TO.items():
            value = getattr(self, name)
            if self.name not in names and value != defaults[name]:
                raise ValueError(f"{name}={value!r} applies to {', '.join(names)}, not to {self.name}")

    @property
    def params(self) -> dict[str, Any]:
        """The parameters that apply to this explainer, by name (a copy, for display and tests).

        >>> ExplainerSpec("ipfi", alpha=0.01).params
        {'alpha': 0.01, 'storage_size': 100}
        """
        names = ["alpha", "storage_size", *(n for n, applies in self.APPLIES_TO.items() if self.name in applies)]
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}


@dataclass(frozen=True, slots=True)
class ExplanationValue:
    """One explainer's current value for one feature, as published.

    ``block`` and ``model_loss``: the increments and the model's losses since the previous report
    (:class:`~streamxai.core.increments.Block`); ``stderr``: the value's standard error, if any;
    ``n_seen``: the steps of its kind the explainer has seen, explained or not; ``var_factor``: the
    increments' variance factor (None: independent).
    """

    # StreamExplainer._step builds these by position, in this order
    explainer: str
    feature: str
    value: float
    n_explained: int
    curve: dict[str, list] | None = None
    block: Block | None = None
    stderr: float | None = None
    model_loss: Block | None = None
    n_seen: int = 0
    var_factor: float | None = None


def units_of_group(
    group: int, n_groups: int, feature_names: Sequence[str], with_isage: bool
) -> list[str]:
    """The work units dealt to ``group`` of ``n_groups`` (round robin, iSAGE first).

    >>> units_of_group(0, 2, ["a", "b", "c"], True), units_of_group(1, 2, ["a", "b", "c"], True)
    (['*isage*', 'b'], ['a', 'c'])
    """
    if not 0 <= group < n_groups:
        raise ValueError(f"group {group} is not in [0, {n_groups})")
    units = ([ISAGE_UNIT] if with_isage else []) + list(feature_names)
    return [u for i, u in enumerate(units) if i % n_groups == group]


class StreamExplainer(Component):
    """Explainers over one stream's model: each event is explained with the model as it is,
    then the model learns it.

    ``model`` is the prototype: the explainers evaluate a clone of it (``current_model``), and
    ``model`` itself is never trained. With labels that come later an event takes two steps
    (:meth:`step`): at its arrival (``predict``) iPDP explains it; when its label comes (``learn``)
    iPFI and iSAGE explain it and the model learns it; :meth:`process_one` takes both at once.
    Each part reports every ``emit_every`` explained steps. A worker builds its group's part with
    :meth:`on_worker` (units: one per feature, one for the iSAGE chain, :func:`units_of_group`),
    which gives exactly the all-units explainer's values for its units.

    Parameters
    ----------
    model
        The river model (a prototype: a clone of it learns the stream).
    feature_names
        All model inputs, in order.
    specs
        The explainers (:class:`ExplainerSpec`).
    seed
        Seed of all random draws, with ``stream_id``.
    stream_id
        The stream's id, mixed into the seed.
    categorical
        The stream's categorical features (iSAGE's and iPDP's unless a spec names its own).
    emit_every
        Explained steps between two reports of a part.

    Examples
    --------
    >>> from river import linear_model
    >>> se = StreamExplainer(
    ...     linear_model.LinearRegression(),
    ...     feature_names=["a", "b"],
    ...     specs=[ExplainerSpec("ipfi", output="value", loss="squared", alpha=0.1)],
    ...     seed=1, stream_id="s")
    >>> for t in range(50):
    ...     out = se.process_one({"a": t % 7 / 7, "b": t % 3 / 3}, 2 * (t % 7 / 7))
    >>> sorted(v.feature for v in out), se.model_version, se.evaluation_path
    (['a', 'b'], 50, 'fast')
    >>> se.current_model is not se.model, se.model.weights, se.clone().model_version
    (True, {}, 0)

    The same with the label of each event coming later, and a report every 10 explained steps:

    >>> se = StreamExplainer(linear_model.LinearRegression(), ["a", "b"], seed=1, stream_id="s", emit_every=10,
    ...     specs=[ExplainerSpec("ipfi", output="value", loss="squared", alpha=0.1),
    ...            ExplainerSpec("ipdp", output="value", loss=None, alpha=0.1, grid_size=3)])
    >>> reports = []
    >>> for t in range(20):
    ...     reports += [(t, v.explainer) for v in se.step("predict", {"a": t % 7 / 7, "b": t % 3 / 3})]
    ...     if t >= 5:  # the label of event t - 5 comes
    ...         s = t - 5
    ...         reports += [(t, v.explainer) for v in se.step("learn", {"a": s % 7 / 7, "b": s % 3 / 3}, 2 * (s % 7 / 7))]
    >>> sorted(set(reports)), se.model_version
    ([(9, 'ipdp'), (14, 'ipfi'), (19, 'ipdp')], 15)
    """

    #: the white-box evaluator the explainers share (None: not set up yet, or none)
    _evaluator: Any = None
    #: the watch of the stream's inputs and its findings not yet taken (class defaults, for a checkpoint)
    inputs = False
    _monitor: InputMonitor | None = None
    _labels: LabelWatch | None = None  # watches the labels where the monitor watches the inputs
    _faults: tuple[InputFault, ...] = ()
    #: what a worker sets (:meth:`on_worker`)
    units: list[str] | None = None
    fast_path = "auto"

    def __init__(
        self,
        model: Any,
        feature_names: Sequence[str],
        specs: Sequence[ExplainerSpec],
        seed: int | None = 0,
        stream_id: str = "",
        categorical: Sequence[str] = (),
        emit_every: int = 1,
    ):
        self.model = model
        self.feature_names = list(feature_names)
        self.specs = list(specs)
        self.seed = seed
        self.stream_id = stream_id
        self.categorical = list(categorical)
        self.emit_every = check_positive_int(emit_every, "emit_every", " (explained steps between two reports)")
        self._reset()

    @classmethod
    def on_worker(cls, *args: Any, units: Sequence[str] | None = None, fast_path: str = "auto", inputs: bool = False,
                  **params: Any) -> StreamExplainer:
        """A StreamExplainer as a worker runs it: ``units`` of its group (None: all),
        ``fast_path`` (``"off"`` always calls the model) and ``inputs`` (watch the stream's inputs, in
        the group of the first unit). A clone keeps them."""
        se = cls(*args, **params)
        se.units = None if units is None else list(units)
        se.fast_path = fast_path
        se.inputs = inputs
        se._reset()
        return se

    def clone(self, new_params: dict[str, Any] | None = None, include_attributes: bool = False) -> StreamExplainer:
        c = super().clone(new_params, include_attributes)
        if (c.units, c.fast_path, c.inputs) != (self.units, self.fast_path, self.inputs):
            c.units, c.fast_path, c.inputs = self.units, self.fast_path, self.inputs
            c._reset()
        return c

    @property
    def current_model(self) -> Any:
        """The model as it is now: a clone of ``model`` that has learned ``model_version`` events."""
        return self._model

    def _reset(self) -> None:
        self._model = fresh_copy(self.model)
        self.model_version = 0
        #: events seen with their label (learned), explained or not
        self.n_seen = 0
        self._seen = {"predict": 0, "learn": 0}
        self._explained = {"predict": 0, "learn": 0}
        self._losses = IncrementTracker(["loss"])
        all_units = [ISAGE_UNIT, *self.feature_names]
        units = all_units if self.units is None else self.units
        unknown = [u for u in units if u not in all_units]
        if unknown:
            raise ValueError(f"units {unknown} are not features of this stream nor {ISAGE_UNIT!r}")
        features = [f for f in self.feature_names if f in units]
        first = ISAGE_UNIT if self._with_isage() else self.feature_names[0]  # group 0 holds it
        #: every feature's values, watched for data faults by one group: the one of the first unit
        self._monitor = InputMonitor(self.feature_names) if self.inputs and first in units else None
        self._labels = LabelWatch() if self._monitor is not None else None
        self._faults = ()
        seed = derive_seed(self.seed, self.stream_id)
        self._explainers = []
        for spec in self.specs:
            if spec.name == "isage" and ISAGE_UNIT not in units:
                continue
            if spec.name != "isage" and not features:
                continue
            self._explainers.append(self._build(spec, features, seed))

    def _with_isage(self) -> bool:
        return any(spec.name == "isage" for spec in self.specs)

    def take_faults(self) -> list[InputFault]:
        """The data faults the stream's inputs showed since the last call (:mod:`~streamxai.core.change.inputs`):
        found by the group that holds the first unit, at the positions its steps were given."""
        out, self._faults = list(self._faults), ()
        return out

    def _build(self, spec: ExplainerSpec, features: list[str], seed: int | None) -> Any:
        from .explainers import IPDP, IPFI, ISAGE

        fn = ModelFunction(self._model, output=spec.output, target_class=spec.target_class,
                           fast_path=self.fast_path)
        if spec.name == "ipfi":
            return IPFI(fn, spec.loss, self.feature_names, features=features, alpha=spec.alpha,
                        storage_size=spec.storage_size, seed=seed)
        categorical = list(spec.categorical if spec.categorical is not None else self.categorical) or None
        if spec.name == "isage":
            return ISAGE(fn, spec.loss, self.feature_names, alpha=spec.alpha, n_inner_samples=spec.n_inner_samples,
                         removal=spec.removal, storage_size=spec.storage_size, categorical=categorical, seed=seed)
        return IPDP(fn, self.feature_names, features=features, alpha=spec.alpha, grid_size=spec.grid_size,
                    storage_size=spec.storage_size, categorical=categorical, seed=seed)

    @property
    def explainers(self) -> list[Any]:
        return list(self._explainers)

    def _share_evaluator(self) -> None:
        """One white-box evaluator for all explainers, kept from one evaluation to the next
        until the model learns (its scope: what x's rows share, each leaf's factors)."""
        from .fastpath import compile_model

        fast = compile_model(self._model) if self.fast_path == "auto" else None
        if fast is not None:
            fast.shared = True
            for ex in self._explainers:
                ex.model_fn.share(fast)
        self._evaluator = fast if fast is not None else False

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_evaluator", None)  # rebuilt on first use
        return state

    @property
    def evaluation_path(self) -> str:
        """How the explainers evaluate the model: ``"fast"`` (from its internals, exactly the
        values of calling it; :mod:`streamxai.core.fastpath`) or ``"black_box"``."""
        paths = {ex.model_fn.path for ex in self._explainers}
        return "fast" if paths == {"fast"} else "black_box"

    @property
    def bookkeeping_path(self) -> str:
        """How the explainers' per-event bookkeeping runs: ``"compiled"`` (the kernels of
        :mod:`streamxai.core.kernels`, bit for bit the Python code's values) or ``"python"``
        (not built, or ``STREAMXAI_PURE_PYTHON=1``)."""
        return kernels.PATH

    @property
    def fallbacks(self) -> int:
        """Calls the fast path handed back to black-box evaluation (a part of the model it
        does not recognise), over all explainers."""
        return sum(ex.model_fn.fallbacks for ex in self._explainers)

    def process_one(
        self, x: dict[str, Any], y: Any, explain: bool = True, report: bool = True, loss: float | None = None,
        position: int | None = None,
    ) -> list[ExplanationValue]:
        """Explain ``(x, y)`` with the current model (if ``explain``), then learn it; an event
        without a target (``y is None``) is neither explained nor learned.

        Returns the current values when ``explain`` and ``report`` (``report=False`` skips building
        them; the increments go into the next report's blocks). ``loss``: the model's prequential loss
        on the event, gathered into the next report's ``model_loss``."""
        if self._monitor is not None and position is not None:
            self._watch(position, x, y, "predict" if y is None else "both", loss)
        if y is None:
            return []
        self._count("predict", explain)
        self._count("learn", explain)
        shown = explain and report
        return self._step(x, y, "both", explain, loss, {"predict": shown, "learn": shown}, build=True)

    def step(self, kind: str, x: dict[str, Any], y: Any = None, explain: bool = True, loss: float | None = None,
             build: bool = True, position: int | None = None) -> list[ExplanationValue]:
        """One step of an event: ``predict`` (explainers that need no label explain ``x``),
        ``learn`` (the others explain ``(x, y)``, then the model learns it) or ``both``; returns the
        values of the explainers whose part reports now. ``build=False`` (a replay) starts the new
        blocks without building values. ``position``: the step's place in the stream's record of
        arrivals, where inputs and labels are watched for data faults (None: not watched)."""
        if kind not in STEPS:
            raise ValueError(f"step {kind!r} is not one of {STEPS}")
        if kind != "predict" and y is None:
            raise ValueError(f"a {kind} step needs the event's label y")
        if self._monitor is not None and position is not None:
            self._watch(position, x, y, kind, loss)
        report = {part: self._count(part, explain) for part in ("predict", "learn") if kind in (part, "both")}
        return self._step(x, y, kind, explain, loss, report, build)

    def _watch(self, position: int, x: dict[str, Any], y: Any, kind: str, loss: float | None = None) -> None:
        """The input watch takes in an arrival's values (``predict`` or ``both``), with the
        loss where the label came with it; the label watch the arrival and label ``y``."""
        if self._labels is None:  # a checkpoint made before labels were watched
            self._labels = LabelWatch()
        if kind == "learn":
            self._faults = (*self._faults, *self._labels.labelled(position, y, loss))
        else:
            both = kind == "both"
            label = self._labels.number(y) if both else None
            self._faults = (*self._faults, *self._monitor.update(position, x, loss if both else None, label),
                            *self._labels.arrival(position, y if both else None, loss if both else None))

    def _count(self, part: str, explain: bool) -> bool:
        """One more step of ``part``; whether it reports."""
        self._seen[part] += 1
        if not explain:
            return False
        self._explained[part] += 1
        return self._explained[part] % self.emit_every == 0

    def _step(self, x: dict[str, Any], y: Any, kind: str, explain: bool, loss: float | None,
              report: dict[str, bool], build: bool) -> list[ExplanationValue]:
        if self._evaluator is None:
            self._share_evaluator()
        learn = kind != "predict"
        if learn:
            self.n_seen += 1
            if loss is not None:
                self._losses.add("loss", float(loss))
        out: list[ExplanationValue] = []
        model_loss = self._losses.take().get("loss") if report.get("learn") else None
        for ex in self._explainers:
            part = "learn" if NEEDS_LABEL[ex.name] else "predict"
            if part not in report:
                continue
            if not explain:
                ex.observe_one(x, y)
                continue
            values = ex.explain_one(x, y)
            if not report[part]:
                continue
            blocks = ex.increments.take()
            if not build:
                continue
            curves = ex.curves() if hasattr(ex, "curves") else {}
            stderr = ex.stderr
            factors = ex.variance_factors
            n = ex.n_explained
            seen = self._seen[part]
            for feat, val in values.items():  # (by position: a frozen dataclass's keywords cost a fifth more)
                out.append(ExplanationValue(ex.name, feat, float(val), n, curves.get(feat), blocks.get(feat),
                                            stderr.get(feat), model_loss, seen, factors.get(feat)))
        if learn:
            self._model.learn_one(x, y)
            if self._evaluator:
                self._evaluator.invalidate()  # what it kept was of the model before this event
            self.model_version += 1
        return out
