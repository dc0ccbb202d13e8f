"""From settings to core objects: the one place that decides what runs for a stream, so the
pipeline and the in-process reference use the same models, explainers, parameters and seeds.
"""

from __future__ import annotations

from typing import Any

from river import base
from streamxai.schemas import ConfigError

from .core.labels import LabelJoin
from .core.losses import BrierOf
from .core.prequential import PrequentialModel
from .core.stream import ExplainerSpec, StreamExplainer, units_of_group
from .modelspec import build_model, check_takes_strings
from .settings import Settings
from .toml_text import toml_key

__all__ = ["explainer_specs", "stream_explainer", "explainer_changes", "prequential_model", "label_join",
           "group_units", "BrierOf", "check_streams", "model_params"]


def explainer_specs(s: Settings) -> list[ExplainerSpec]:
    """iPFI explains ``s.output`` with ``s.loss``. iSAGE and iPDP need a numeric output: for
    classification iPDP explains the probability of ``s.target_class`` and iSAGE that
    probability with the Brier loss (robust to tree leaves' 0/1 probabilities) or all class
    probabilities with cross-entropy (``s.isage_loss``); for regression both explain the value."""
    classification = s.task == "classification"
    specs = []
    for name in s.explainers:
        if name == "ipfi":
            specs.append(ExplainerSpec("ipfi", s.output, s.loss, alpha=s.alpha, storage_size=s.storage_size))
        elif name == "isage":
            cross_entropy = classification and s.isage_loss == "cross_entropy"
            if not classification:
                output, loss, target_class = "value", s.loss, None
            elif cross_entropy:
                output, loss, target_class = "proba", "cross_entropy", None
            else:
                output, loss, target_class = "proba_of", BrierOf(s.target_class), s.target_class
            specs.append(ExplainerSpec(
                "isage", output, loss, target_class=target_class, alpha=s.alpha, storage_size=s.storage_size,
                removal=s.isage_removal, n_inner_samples=s.isage_n_inner_samples or (8 if cross_entropy else 2)))
        elif name == "ipdp":
            specs.append(ExplainerSpec(
                "ipdp",
                "proba_of" if classification else "value",
                None,
                target_class=s.target_class if classification else None,
                alpha=s.alpha,
                grid_size=s.grid_size,
            ))
    return specs


def group_units(s: Settings, group: int | None) -> list[str] | None:
    if group is None:
        return None
    return units_of_group(group, s.explain_groups, s.features, "isage" in s.explainers)


def stream_explainer(s: Settings, stream_id: str, group: int | None = None) -> StreamExplainer:
    """The explainers of ``stream_id`` (all units, or those of ``group``) over a fresh model."""
    return StreamExplainer.on_worker(
        build_model(s.model, s.model_params, s.model_seed),
        feature_names=s.features,
        specs=explainer_specs(s),
        seed=s.explain_seed,
        stream_id=stream_id,
        categorical=s.categorical,
        emit_every=s.emit_every,
        units=group_units(s, group),
        fast_path=s.fast_path,
        inputs=s.change_inputs,
    )


def explainer_changes(se: StreamExplainer, s: Settings, group: int | None = None) -> list[str]:
    """What of ``se`` (say, restored from a checkpoint) differs from what ``s`` (a stream's
    effective settings) builds for its group: the settings' names, none when it fits.

    >>> s = Settings(features=["a", "b"], explainers=["ipfi", "ipdp"])
    >>> se = stream_explainer(s, "t")
    >>> explainer_changes(se, s), explainer_changes(se, s.replace(explainers=["ipfi"], alpha=0.01))
    ([], ['explainers', 'alpha'])
    >>> explainer_changes(stream_explainer(s, "t", 0), s.replace(explain_groups=2), 0)
    ['explain_groups']
    """
    changed = [name for name, was, now in (
        ("model", model_params(se.model), model_params(build_model(s.model, s.model_params, s.model_seed))),
        ("features", (se.feature_names, se.categorical), (list(s.features), list(s.categorical))),
        ("explain_seed", se.seed, s.explain_seed),
        ("explainers", [x.name for x in se.specs], list(s.explainers)),
    ) if was != now]
    if se.units != group_units(s, group) and not {"features", "explainers"} & set(changed):
        changed.append("explain_groups")  # the group's units (they follow the features and iSAGE too)
    params = {"alpha": "alpha", "storage_size": "storage_size", "grid_size": "grid_size", "removal": "isage_removal",
              "n_inner_samples": "isage_n_inner_samples", "loss": "loss", "output": "output",
              "target_class": "target_class"}
    now = {x.name: x for x in explainer_specs(s)}
    for old in se.specs:  # the parameters of the explainers it keeps
        new = now.get(old.name)
        changed += [name for field, name in params.items()
                    if new is not None and getattr(old, field) != getattr(new, field) and name not in changed]
    return changed


def model_params(model: Any) -> Any:
    """What ``model`` is built from, comparable with ``==``: its class and river parameters, those
    of its parts likewise (a model that is not a river ``Base``: itself).

    >>> from river import linear_model, optim
    >>> model_params(linear_model.LinearRegression(optimizer=optim.SGD(0.1))) == \\
    ...     model_params(linear_model.LinearRegression(optimizer=optim.SGD(0.1)))
    True
    """
    if isinstance(model, base.Base):
        return type(model), model_params(model._get_params())
    if isinstance(model, dict):
        return {k: model_params(v) for k, v in model.items()}
    if isinstance(model, (list, tuple)):
        return type(model)(model_params(v) for v in model)
    return model


def prequential_model(s: Settings) -> PrequentialModel:
    return PrequentialModel(build_model(s.model, s.model_params, s.model_seed), output=s.output, loss=s.loss)


def label_join(s: Settings) -> LabelJoin:
    """A stream's model, predicting each event on arrival and learning it when its label comes."""
    return LabelJoin(prequential_model(s), s.features, s.categorical, max_label_delay=s.max_label_delay,
                     label_timeout_s=s.label_timeout_s)


#: where model_params were given (:meth:`Settings.source`), as the user wrote them
_PARAMS_ORIGINS = {"file": "the settings file", "environment": "$STREAMXAI_MODEL_PARAMS", "command line": "--set model_params"}


def check_streams(s: Settings) -> None:
    """What a worker checks before it starts, each failure one :class:`ConfigError` line naming
    the stream profile: the streams have features, and the model and explainers of the top level
    and of every profile build and take a string value of each categorical feature.

    >>> check_streams(Settings(streams={"r-*": {"features": ["a"], "model": "river.nope.M"}}))
    Traceback (most recent call last):
    ...
    streamxai.schemas.errors.ConfigError: [streams."r-*"] model: model 'river.nope.M' cannot be imported: No module named 'river.nope'; give a full import path such as river.forest.ARFClassifier
    """
    profiles = s.profiles()
    if not s.features and not profiles:
        raise ConfigError(
            "the worker needs the features its streams carry: set features = [\"a\", \"b\"] in the settings file "
            "(or STREAMXAI_FEATURES=a,b, or --set features=a,b), or per stream in [streams.\"<glob>\"] tables")
    todo = [("", s, {})] if s.features else []  # the top level: its own errors say which setting
    todo += [(f"[streams.{toml_key(glob)}] ", p, s.streams[glob]) for glob, p in profiles.items()]
    for where, p, table in todo:
        if not p.features:
            raise ConfigError(f"{where}features: none in the table and none at the top level; list the features "
                              "of the streams it matches")
        try:
            build_model(p.model, p.model_params, p.model_seed)
            check_takes_strings(p.model, p.model_params, p.model_seed, list(p.features), list(p.categorical), p.task)
        except ConfigError as e:
            fact, params_refused, _ = str(e).partition("; set model_params")  # model_params the model does not take
            if params_refused and where and "model_params" not in table:
                raise ConfigError(f"{where}model: {fact} (model_params from the top level): set model_params in "
                                  f"{where.strip()} (model_params = {{}} for its own defaults)") from None
            if params_refused and not where and p.source("model_params") != "default":
                # given for another model, kept when the model changed (copied from `streamxai config`, say)
                origin = _PARAMS_ORIGINS.get(p.source("model_params"), p.source("model_params"))
                raise ConfigError(f"{fact} (model_params from {origin}: those of another model?); leave model_params "
                                  "out for its own defaults, or set it to keyword arguments it takes") from None
            raise ConfigError(f"{where}model: {e}" if where else str(e)) from None
        try:
            stream_explainer(p, "check")
        except (ConfigError, ValueError, TypeError) as e:
            raise ConfigError(f"{where}explainers: {e}") from None
