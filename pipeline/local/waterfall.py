"""One prediction's local explanation as people read it: a waterfall from the base value to the
prediction, and the lines ``streamxai tail local-explanations`` prints.

Features come largest by absolute value first; read from the bottom up, each bar starts where
the one below it ended, from the base value (the mean prediction over recent values) to the
prediction. Features past ``max_rows`` (and those the worker left out) share one bar.
>>> msg = {"schema": "local_explanation/v1", "stream_id": "cards", "seq": 41, "position": 41,
...        "model_version": 41, "target": True, "prediction": 0.9, "base": 0.2, "method": "tree",
...        "exact": True, "n_background": 100, "event_id": "txn-41", "rest": 0.05, "n_features": 4,
...        "values": {"amount": 0.5, "hour": -0.1, "country": 0.25}, "x": {"amount": 950.0, "hour": 3,
...        "country": "NZ"}}
>>> w = waterfall(parse_local(msg))
>>> [(r["feature"], r["start"], r["end"]) for r in w["rows"]]
[('amount', 0.4, 0.9), ('country', 0.15, 0.4), ('hour', 0.25, 0.15), ('1 other feature', 0.2, 0.25)]
>>> print(local_text(parse_local(msg)))
stream cards  event txn-41 (seq 41)  model version 41  exact (tree)
  prediction 0.9000 (probability of True) = base value 0.2000 (mean over 100 recent events) + 0.7000
  feature      value      attribution
  amount       950        +0.5000
  country      NZ         +0.2500
  hour         3          -0.1000
  1 other feature          +0.0500
"""

from __future__ import annotations

import math
from typing import Any

from streamxai.schemas import LocalExplanation

from .markers import level_text

__all__ = ["parse_local", "local_of", "waterfall", "local_text", "find_local", "value_text", "MAX_ROWS"]

#: the bars of a waterfall before the smaller features share one
MAX_ROWS = 12
#: the characters of a feature's value that a view shows (a long string is cut, with an ellipsis)
MAX_VALUE_CHARS = 40


def parse_local(obj: Any) -> dict[str, Any] | None:
    """What the views show of a ``local_explanation/v1`` message, or None when it cannot be
    shown as a sum (a value, the base or the prediction not a finite number)."""
    if not isinstance(obj, dict) or obj.get("schema") != LocalExplanation.SCHEMA:
        return None
    values = obj.get("values")
    base, prediction, rest = _num(obj.get("base")), _num(obj.get("prediction")), _num(obj.get("rest", 0.0))
    seq = obj.get("seq")
    if (not isinstance(values, dict) or base is None or prediction is None or rest is None
            or not isinstance(seq, int) or isinstance(seq, bool)):
        return None
    nums = {str(f): _num(v) for f, v in values.items()}
    if any(v is None for v in nums.values()):
        return None
    x = obj.get("x") if isinstance(obj.get("x"), dict) else {}
    n_features = obj.get("n_features")
    event_id = obj.get("event_id")
    stderr = obj.get("stderr") if isinstance(obj.get("stderr"), dict) else {}
    return {
        "stream_id": obj.get("stream_id"), "seq": seq, "event_id": event_id if isinstance(event_id, str) else None,
        "position": _int(obj.get("position")), "model_version": _int(obj.get("model_version")),
        "target": obj.get("target") if isinstance(obj.get("target"), (str, int, float, bool)) else None,
        "prediction": prediction, "base": base, "values": nums, "rest": rest,
        "n_features": n_features if _int(n_features) is not None and n_features >= len(nums) else len(nums),
        "x": {f: _shown_value(x.get(f)) for f in nums if f in x},
        "stderr": {f: e for f, e in ((f, _num(stderr.get(f))) for f in nums) if e is not None},
        "method": str(obj.get("method")), "exact": obj.get("exact") is True,
        "n_background": _int(obj.get("n_background")),
    }


def local_of(explainer: Any, x: dict[str, Any], stream_id: str = "notebook", seq: int | None = None,
             event_id: str | None = None) -> dict[str, Any]:
    """The last explanation of a :class:`~streamxai.LocalShapley` (of the event ``x`` it
    explained) as the views show a message: for :func:`local_text` and
    :func:`~streamxai.local.plot_local.draw_waterfall` in a notebook. ``seq`` defaults to the
    explanations made before it.

    >>> from river import linear_model
    >>> import streamxai
    >>> model = linear_model.LinearRegression()
    >>> local = streamxai.LocalShapley(model, ["a", "b"], seed=0)
    >>> for i in range(50):
    ...     row = {"a": i % 5, "b": i % 3}
    ...     local.learn_one(row)
    ...     model.learn_one(row, 2.0 * row["a"] - row["b"])
    >>> x = {"a": 4, "b": 0}
    >>> values = local.explain_one(x)
    >>> shown = local_of(local, x)
    >>> shown["values"] == values, shown["prediction"] == local.prediction, shown["x"]
    (True, True, {'a': 4, 'b': 0})
    """
    last = explainer.last
    if last is None:
        raise ValueError("the explainer has explained nothing yet: call explain_one(x) first")
    missing = [f for f in last.values if f not in x]
    if missing:
        raise ValueError(f"x lacks {missing}: give the event that explain_one explained")
    n = len(explainer.background)
    obj = {"schema": LocalExplanation.SCHEMA, "stream_id": stream_id,
           "seq": explainer.n_explained - 1 if seq is None else seq, "position": None, "model_version": None,
           "target": last.target, "prediction": last.prediction, "base": last.base, "values": dict(last.values),
           "method": last.method, "exact": last.exact, "n_background": n, "stderr": dict(last.stderr) or None,
           "event_id": event_id, "x": {f: x[f] for f in last.values}}
    local = parse_local(obj)
    if local is None:
        raise ValueError("the explanation holds a value that is not a finite number")
    return local


def waterfall(local: dict[str, Any], max_rows: int = MAX_ROWS) -> dict[str, Any]:
    """The bars of :func:`parse_local`'s ``local``: ``rows`` top first (``feature``, ``x`` and its
    text ``x_text``, ``value``, ``stderr`` when sampled, and the bar from ``start`` to ``end``),
    the base value and the prediction."""
    values = local["values"]
    order = sorted(values, key=lambda f: (-abs(values[f]), f))
    shown = order[:max_rows]
    others = local["rest"] + sum(values[f] for f in order[max_rows:])
    n_others = local["n_features"] - len(shown)
    rows: list[dict[str, Any]] = []
    at = local["base"]
    if n_others:
        rows.append({"feature": f"{n_others} other feature{'' if n_others == 1 else 's'}", "x": None, "x_text": "",
                     "value": others, "start": at, "end": at + others, "others": n_others})
        at += others
    for f in reversed(shown):
        x = local["x"].get(f)
        rows.append({"feature": f, "x": x, "x_text": value_text(x), "value": values[f], "start": at, "end": at + values[f],
                     "stderr": local["stderr"].get(f)})
        at += values[f]
    rows.reverse()
    return {"base": local["base"], "prediction": local["prediction"], "end": at, "rows": rows}


def local_text(local: dict[str, Any], top: int = 10) -> str:
    """The lines ``streamxai tail local-explanations`` prints for one explained prediction."""
    w = waterfall(local, max_rows=top)
    event = f"event {local['event_id']} (seq {local['seq']})" if local["event_id"] else f"seq {local['seq']}"
    how = f"exact ({local['method']})" if local["exact"] else f"sampled ({local['method']}, ± one standard error)"
    target = local["target"]
    what = "" if target is None else f" (probability of {target})"
    n_bg = local["n_background"]
    lines = [f"stream {local['stream_id']}  {event}  model version {local['model_version']}  {how}",
             f"  prediction {_v(local['prediction'])}{what} = base value {_v(local['base'])}"
             f" (mean over {n_bg} recent event{'' if n_bg == 1 else 's'}) {_signed(local['prediction'] - local['base'], ' ')}"]
    listed = [r for r in w["rows"] if "others" not in r]
    width = max([len("feature")] + [len(r["feature"]) for r in listed])
    xw = max([len("value") + 5] + [len(r["x_text"]) for r in listed])
    lines.append(f"  {'feature':<{width}}  {'value':<{xw}} attribution")
    for r in w["rows"]:
        if "others" in r:
            lines.append(f"  {r['feature']:<{width + xw + 2}} {_signed(r['value'])}")
            continue
        err = local["stderr"].get(r["feature"])
        lines.append(f"  {r['feature']:<{width}}  {r['x_text']:<{xw}} {_signed(r['value'])}"
                     + ("" if err is None else f" ± {_v(err)}"))
    return "\n".join(lines)


def find_local(locals_: Any, event: str | None) -> dict[str, Any] | None:
    """The newest of ``locals_`` (parsed, oldest first) when ``event`` is None, else the one whose
    ``event_id`` is ``event``, or failing that (an event of the own envelope has none) whose seq
    is ``event``'s number.

    >>> ls = [{"seq": 3, "event_id": "t-3"}, {"seq": 4, "event_id": None}]
    >>> find_local(ls, None)["seq"], find_local(ls, "t-3")["seq"], find_local(ls, "4")["seq"], find_local(ls, "9")
    (4, 3, 4, None)
    """
    kept = list(locals_)
    if event is None:
        return kept[-1] if kept else None
    for loc in reversed(kept):
        if loc["event_id"] == event:
            return loc
    if event.isdigit():
        for loc in reversed(kept):
            if loc["seq"] == int(event):
                return loc
    return None


def value_text(v: Any) -> str:
    """A feature's value in a line of text: a whole number without decimals, others to six
    significant digits, a string as it is, nothing for None.

    >>> value_text(950.0), value_text(0.123456789), value_text("NZ"), value_text(None), value_text(True)
    ('950', '0.123457', 'NZ', '', 'True')
    """
    if v is None:
        return ""
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:.6g}"
    return str(v)


def _signed(v: float, sep: str = "") -> str:
    return ("+" if v >= 0 else "-") + sep + _v(abs(v))


def _v(v: float) -> str:
    return level_text(v, 4)


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _shown_value(v: Any) -> Any:
    """A feature's value as the views show it: a number, a boolean, None, or a string cut to
    :data:`MAX_VALUE_CHARS` characters."""
    if isinstance(v, str):
        return v if len(v) <= MAX_VALUE_CHARS else v[:MAX_VALUE_CHARS - 1] + "…"
    if isinstance(v, (bool, int)) or v is None:
        return v
    return _num(v)
