"""Wire format: every kind of bad input becomes a specific InvalidMessage; good input round-trips;
the JSON Schema files accept what the code writes and the code refuses what they refuse."""

import dataclasses
import json
import math
import re
from pathlib import Path

import jsonschema
import orjson
import pytest
from streamxai.core.change.inputs import FAULTS
from streamxai.schemas import (
    MESSAGE_TYPES,
    BadValue,
    ChangeEpisode,
    ChangeEvent,
    DeadLetter,
    ExplainDecision,
    ExplainTask,
    Explanation,
    FeatureEvent,
    FeatureMismatch,
    FeatureSpec,
    LabelTypeMismatch,
    LocalExplanation,
    MalformedMessage,
    OversizedMessage,
    Prediction,
    SchemaMismatch,
    decode,
    dumps,
    dumps_fields,
    dumps_obj,
    parse_feature_event,
)

SPEC = FeatureSpec(names=("a", "b", "c"), categorical=frozenset({"c"}), task="classification")
JSON_DIR = Path(__file__).resolve().parents[3] / "schemas" / "json"


def event(**over):
    d = {"schema": "feature_event/v1", "stream_id": "s", "seq": 3, "ts": 1.0,
         "x": {"a": 1.0, "b": 2, "c": "red"}, "y": 1}
    d.update(over)
    return orjson.dumps(d)


def test_good_event_parses_and_normalises_numbers():
    ev = parse_feature_event(event(), SPEC, where="t[0]@0")
    assert ev == FeatureEvent("s", 3, 1.0, {"a": 1.0, "b": 2.0, "c": "red"}, 1)
    assert isinstance(ev.x["b"], float)


@pytest.mark.parametrize(
    "raw, err, fragment",
    [
        (b"not json", MalformedMessage, "not valid JSON"),
        (b"", MalformedMessage, "empty message"),
        (b"[1, 2]", MalformedMessage, "expected a JSON object"),
        (b'{"a": NaN}', MalformedMessage, "not valid JSON"),
        (event(schema="feature_event/v2"), SchemaMismatch, "'feature_event/v2'"),
        (event(schema=None), SchemaMismatch, "expected 'feature_event/v1'"),
        (event(seq=-1), SchemaMismatch, "seq -1"),
        (event(seq="3"), SchemaMismatch, "seq '3'"),
        (event(stream_id="a/b"), SchemaMismatch, "no '/'"),
        (event(extra=1), SchemaMismatch, "unexpected ['extra']"),
        (event(x={"a": 1.0, "b": 2.0}), FeatureMismatch, "missing features ['c']"),
        (event(x={"a": 1.0, "b": 2.0, "c": "r", "d": 1}), FeatureMismatch, "unexpected features ['d']"),
        (event(x={"a": "1.0", "b": 2.0, "c": "r"}), BadValue, "feature 'a'"),
        (event(x={"a": True, "b": 2.0, "c": "r"}), BadValue, "feature 'a'"),
        (event(x={"a": 1.0, "b": 2.0, "c": 1.5}), BadValue, "categorical feature 'c'"),
        (event(y=[1]), LabelTypeMismatch, "label y"),
        (b'{"schema": "feature_event/v1", "stream_id": "s", "seq": 1, "ts": 0, "x": {"a": 1e999, "b": 0, "c": "r"}, "y": 0}',
         MalformedMessage, "infinity"),
    ],
)
def test_bad_input_gets_a_specific_error_naming_the_source(raw, err, fragment):
    with pytest.raises(err) as info:
        parse_feature_event(raw, SPEC, where="features[2]@17")
    assert fragment in str(info.value)
    assert str(info.value).startswith("features[2]@17: ")


def test_oversized_is_refused_before_parsing():
    raw = event(x={"a": 1.0, "b": 2.0, "c": "r" * 5000})
    with pytest.raises(OversizedMessage, match="over the limit of 1000"):
        parse_feature_event(raw, SPEC, where="f[0]@0", max_bytes=1000)


def test_regression_target_must_be_finite_number():
    spec = FeatureSpec(names=("a",), task="regression")
    raw = orjson.dumps({"schema": "feature_event/v1", "stream_id": "s", "seq": 0, "ts": 0, "x": {"a": 1}, "y": "x"})
    with pytest.raises(LabelTypeMismatch, match="label y in stream 's' seq 0 is 'x'"):
        parse_feature_event(raw, spec, where="f[0]@0")


EXAMPLES = [
    FeatureEvent("s", 0, 1.0, {"a": 1.0, "c": "x"}, 1),
    ExplainTask("s", 0, 1.0, {"a": 1.0}, 0, 1, True, 2.0, 0.0),
    ExplainDecision("s", 1, 7, False),
    Prediction("s", 0, 1.0, 1, 0, 1.0, 0),
    Explanation("s", "ipdp", "a", 0.1, 9, 10, 10, 9, {"grid": [0.0, 1.0], "pd": [0.2, 0.4]},
                0.01, {"n": 10, "mean": 0.12, "m2": 0.3}, {"n": 10, "mean": 0.2, "m2": 1.6}, 1.4),
    ChangeEvent("s", "ipfi", "a", "s/ipfi/a", 530, 500, 5000, 30, 0.1, 0.4, [0.09, 0.11], [0.3, 0.5], 0.3, 0.75, 0.08,
               7.5, 6.1, {"a": 0.1, "b": 0.4}, {"a": 0.4, "b": 0.1}, {"a": 2, "b": 1}, {"a": 1, "b": 2},
               {"grid": [0.0, 1.0], "pd": [0.2, 0.4]}, {"grid": [0.0, 1.0], "pd": [0.2, 0.9]}, 0.1, 0.2, 500, 30,
               1058, 997),
    ChangeEpisode("s", "closed", 530, 560, 1600, 500, "degradation", True,
                  [{"explainer": "ipfi", "feature": "a", "seq": 530, "cut_seq": 500, "level_before": 0.1,
                    "level_after": 0.4, "effect": 0.3, "relative_effect": 0.75, "position": 1058,
                    "cut_position": 997}],
                  {"ipfi": {"a": {"before": 0.1, "after": 0.4, "rank_before": 2, "rank_after": 1},
                            "b": {"before": None, "after": None, "rank_before": None, "rank_after": None}}},
                  {"a": {"before": {"grid": [0.0, 1.0], "pd": [0.2, 0.4]}, "after": None}}, 0.1, 0.3, 500, 30,
                  [0.09, 0.11], [0.25, 0.35], 4.1, 1058, 1110, 3190, 997),
    LocalExplanation("s", 9, 12, 12, 1, 0.9, 0.4, {"a": 0.35, "b": 0.15}, "tree", True, 100, event_id="e-9"),
    DeadLetter("malformed", "MalformedMessage: x", "model", {"topic": "t", "partition": 0, "offset": 5}, "AAE=",
               2, "b413f47d13ee2fe6c845b2ee141af81de858df4ec549a58b7970bb96645bc8d2", False, None, 1.0),
]


def test_json_schema_accepts_a_data_fault_episode():
    """A data fault's episode has an alert_key of its own form and a faults field, one fault of each kind."""
    episode = next(m for m in EXAMPLES if isinstance(m, ChangeEpisode))
    schema = json.loads((JSON_DIR / "change_episode.v4.json").read_text())
    for what in FAULTS:
        fault = {"feature": "a", "what": what, "detail": f"{what} since 497", "like": "b" if what == "swapped" else None,
                 "start_position": 497, "median_before": 0.5, "iqr_before": 0.2, "median_after": None,
                 "iqr_after": 0.0, "reliance": None if what == "stopped" else 0.8}
        msg = dataclasses.replace(episode, kind="data_fault", alert_key="s/1058/data_fault", faults=[fault])
        jsonschema.validate(decode(dumps(msg), where="-"), schema)


@pytest.mark.parametrize("msg", EXAMPLES, ids=lambda m: m.SCHEMA)
def test_json_schema_files_accept_what_we_write(msg):
    schema = json.loads((JSON_DIR / (msg.SCHEMA.replace("/", ".") + ".json")).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    obj = decode(dumps(msg), where="-")
    jsonschema.validate(obj, schema)
    # the file's required fields are exactly the message type's fields without defaults
    assert set(schema["properties"]) == {"schema", *(f.name for f in dataclasses.fields(msg))}
    assert set(obj) <= set(schema["properties"])  # event_id only where the event has one


def test_every_message_type_has_exactly_its_one_schema_file():
    """Until 1.0 each message type has one version on the wire: one file each, no other."""
    files = {p.name for p in JSON_DIR.glob("*.json")}
    assert files == {t.replace("/", ".") + ".json" for t in MESSAGE_TYPES}
    assert {m.SCHEMA for m in EXAMPLES} | {"label_event/v1", "label_outcome/v1"} == set(MESSAGE_TYPES)


@pytest.mark.parametrize("other", ["explanation/v3", "explanation/v5", "explain_task/v3", None])
def test_an_explanation_of_another_version_is_refused_naming_the_one_read(other):
    from streamxai.schemas import parse_explanation

    now = orjson.loads(dumps(EXAMPLES[4]))
    assert parse_explanation(orjson.dumps(now), where="e[0]@1").var_factor == 1.4
    with pytest.raises(SchemaMismatch, match=re.escape(f"e[0]@2: schema is {other!r}, expected 'explanation/v4'")):
        parse_explanation(orjson.dumps(now | {"schema": other}), where="e[0]@2")


@pytest.mark.parametrize("other", ["explain_task/v2", "explain_task/v1", "explanation/v4"])
def test_an_explain_task_of_another_version_is_refused_naming_the_one_read(other):
    from streamxai.schemas import parse_explain_task

    now = orjson.loads(dumps(EXAMPLES[1]))
    assert parse_explain_task(orjson.dumps(now), where="t[0]@1", groups=2).position == 0
    with pytest.raises(SchemaMismatch, match=re.escape(f"t[0]@2: schema is {other!r}, expected 'explain_task/v3'")):
        parse_explain_task(orjson.dumps(now | {"schema": other}), where="t[0]@2", groups=2)


@pytest.mark.parametrize("change", [{}, {"curve": None, "var_factor": None, "block": None}, {"event_id": "e-1"},
                                    {"stderr": None, "model_loss": None, "n_seen": 7}])
def test_an_explanation_as_a_worker_writes_it_reads_as_any_other(change):
    """explanation_fields' one check of the usual explanation gives what the general checks give."""
    from streamxai.schemas.parsing import explanation_fields

    doc = orjson.loads(dumps(EXAMPLES[4])) | {"curve": {"1.0": 0.25}} | change
    usual = explanation_fields(orjson.dumps(doc), where="e[0]@4")
    general = explanation_fields(orjson.dumps(doc | {"value": 1, "var_factor": 2} if doc["var_factor"] is not None
                                              else doc | {"value": 1}), where="e[0]@4")
    assert {k: v for k, v in general.items() if k not in ("value", "var_factor")} == \
        {k: v for k, v in usual.items() if k not in ("value", "var_factor")}
    assert type(general["value"]) is float and set(general) == set(usual)
    assert usual["value"] == doc["value"] and usual["var_factor"] == doc["var_factor"]
    assert explanation_fields(orjson.dumps(doc | {"value": float(1)}), where="e[0]@4") == general | (
        {"var_factor": doc["var_factor"]})
    for bad in ({"value": math.inf}, {"value": True}, {"seq": -1}, {"position": 1.5}, {"curve": []}, {"stream_id": 3}):
        with pytest.raises(SchemaMismatch, match=r"e\[0\]@5"):
            explanation_fields(orjson.dumps(doc | bad, option=orjson.OPT_SERIALIZE_NUMPY), where="e[0]@5")


def test_a_bad_var_factor_is_refused():
    from streamxai.schemas import parse_explanation

    now = orjson.loads(dumps(EXAMPLES[4]))
    for bad in ("1.4", -1.0, True):
        with pytest.raises(SchemaMismatch, match=r"e\[0\]@3: var_factor must be null or a finite number"):
            parse_explanation(orjson.dumps(now | {"var_factor": bad}), where="e[0]@3")


def test_a_numeric_feature_is_taken_as_number_takes_it():
    """feature_event_from takes a finite float as it is and leaves anything else to _number:
    the same value and type, or the same error naming the feature, stream and seq."""
    import numpy as np
    from streamxai.schemas.features import _number, feature_event_from

    spec = FeatureSpec(("a",))
    for v in [0.5, -0.0, 1e308, 5e-324, 3, -7, 2**70, True, float("nan"), float("inf"), -float("inf"), "1.0",
              None, np.float64(2.5), np.float64("nan"), np.int64(4), [1.0]]:
        obj = {"schema": "feature_event/v1", "stream_id": "s", "seq": 3, "ts": 1.0, "x": {"a": v}}
        try:
            want = _number(v, "feature 'a' in stream 's' seq 3", "f[0]@1")
        except BadValue as e:
            with pytest.raises(BadValue) as got:
                feature_event_from(obj, spec, where="f[0]@1")
            assert str(got.value) == str(e), v
            continue
        got = feature_event_from(obj, spec, where="f[0]@1").x["a"]
        assert type(got) is float and repr(got) == repr(want), v


def test_the_usual_events_quick_check_gives_what_the_full_checks_give():
    """The usual event's quick check gives what the full checks give, and leaves them what it does not take;
    check_feature_event raises what they raise, or nothing."""
    import random

    from streamxai.schemas.features import _checked_event, check_feature_event, feature_event_from

    rng = random.Random(7)
    # 1e308 twice sums to inf: the numeric check in C (_finite_floats) then leaves it to the loop
    odd = [None, True, 1, -1, 2**63, 1.0, 2.5, float("nan"), float("inf"), 1e308, -1e308, "x", "", [], {}, 3.0]
    quick = fields_checked = 0
    for task, categorical in [(t, c) for t in ("classification", "regression") for c in ({"c"}, set())]:
        spec = FeatureSpec(names=("a", "b", "c"), categorical=frozenset(categorical), task=task)
        for _ in range(3000):
            x = {"a": rng.random(), "b": -rng.random(), "c": rng.choice(["red", 4, -2]) if categorical else 1e308}
            if rng.random() < 0.3:  # the features in another order than the spec's
                x = dict(reversed(x.items()))
            obj = {"schema": "feature_event/v1", "stream_id": rng.choice(["s", "t"]), "seq": rng.randrange(10),
                   "ts": rng.random(), "x": x, "y": rng.choice([1, "k", False, 0.5, None])}
            where = rng.choice(["stream_id", "seq", "ts", "y", "x", "a", "b", "c", "extra", "drop", None])
            if where in ("a", "b", "c"):
                obj["x"][where] = rng.choice(odd)
            elif where == "extra":  # a field, or a feature
                if rng.random() < 0.5:
                    obj["z"] = 1
                else:
                    obj["x"]["d"] = 1.0
            elif where == "drop":
                del obj[rng.choice(["stream_id", "seq", "ts", "x", "y"])]
            elif where is not None:
                obj[where] = rng.choice(odd)
            try:
                want = _checked_event(dict(obj), spec, where="-")
            except Exception as e:  # noqa: BLE001 - the same error, whatever it is
                want = (type(e), str(e))
            try:
                got = feature_event_from(dict(obj), spec, where="-")
            except Exception as e:  # noqa: BLE001
                got = (type(e), str(e))
            assert got == want, (obj, got, want)
            assert repr(got) == repr(want)  # the same types too (1 and 1.0, True and 1 are equal)
            quick += isinstance(got, FeatureEvent) and type(got.ts) is float
            if obj.keys() == {"schema", "stream_id", "seq", "ts", "x", "y"}:  # the fields an explain task carries
                try:
                    checked = check_feature_event(obj["stream_id"], obj["seq"], obj["ts"], obj["x"], obj["y"], spec,
                                                  where="-")
                except Exception as e:  # noqa: BLE001
                    checked = (type(e), str(e))
                assert checked == (None if isinstance(want, FeatureEvent) else want), (obj, checked, want)
                fields_checked += 1
    assert quick > 2000  # the quick checks took many of them
    assert fields_checked > 6000


def test_a_feature_event_with_fields_missing_or_unknown_says_which():
    from streamxai.schemas.features import feature_event_from

    base = {"schema": "feature_event/v1", "stream_id": "s", "seq": 0, "ts": 1.0, "x": {"a": 1.0}}
    for obj, said in [({k: v for k, v in base.items() if k not in ("x", "ts")}, "missing ['ts', 'x'], unexpected []"),
                      (base | {"z": 1, "b": 2}, "missing [], unexpected ['b', 'z']"),
                      ({k: v for k, v in base.items() if k != "seq"} | {"sq": 0}, "missing ['seq'], unexpected ['sq']")]:
        with pytest.raises(SchemaMismatch, match=re.escape(f"feature_event/v1 fields: {said}")):
            feature_event_from(obj, FeatureSpec(("a",)), where="f[0]@1")
    assert feature_event_from(base | {"y": None}, FeatureSpec(("a",)), where="f[0]@1").y is None


@pytest.mark.parametrize("msg", [*EXAMPLES, ExplainTask("s", 4, 1.0, {"a": 1.0}, 0, 1, True, 2.0, None, "learn", 9, "e-4"),
                                 Prediction("s", 3, 1.0, None, 1, None, 3, 5, "e-3"),
                                 Explanation("s", "ipfi", "a", 0.5, 9, 10, 10, 9, position=12, event_id="e-9")],
                         ids=lambda m: m.SCHEMA)
def test_a_message_written_from_its_fields_is_the_message_written(msg):
    """dumps_fields (no instance made) writes the bytes dumps writes for the instance: a position
    left None is its seq, an event_id left None is not written; a non-finite value is refused."""
    values = tuple(None if f.name == "position" and getattr(msg, f.name) == getattr(msg, "seq", None)
                   else getattr(msg, f.name) for f in dataclasses.fields(msg))
    assert dumps_fields(type(msg), values) == dumps(msg)
    with pytest.raises(ValueError):
        dumps_fields(type(msg), values[:-1])
    if isinstance(msg, Explanation):
        with pytest.raises(ValueError, match="non-finite"):
            dumps_fields(Explanation, values[:3] + (float("inf"),) + values[4:])


def test_non_finite_values_are_refused_not_written_as_null():
    with pytest.raises(ValueError, match="non-finite"):
        dumps(Explanation("s", "ipfi", "a", float("nan"), 0, 1, 1, 0))


def test_non_finite_values_are_found_wherever_they_are():
    """The quick finite check and dumps_obj's null count refuse exactly what the path-naming walk refuses, on
    random nested values with one made non-finite or none."""
    import random

    import numpy as np
    from streamxai.schemas.wire import _check_finite, _finite

    gen = random.Random(4)

    def tree(depth):
        r = gen.random()
        if depth > 3 or r < 0.4:
            return gen.choice([gen.gauss(0, 1e6), 0.0, -0.0, 1e308, 3, True, None, "s", "a null", np.float64(2.5)])
        kids = [tree(depth + 1) for _ in range(gen.randint(0, 5))]
        # a key or a string that holds "null": dumps_obj's count of nulls must not be fooled by them
        return ({("null" if gen.random() < 0.1 else f"k{i}"): k for i, k in enumerate(kids)} if r < 0.7
                else kids if r < 0.85 else tuple(kids))

    def spoil(obj, bad):
        """obj with one float leaf (chosen at random, if any) replaced by bad."""
        if isinstance(obj, dict):
            keys = list(obj)
            if keys:
                k = gen.choice(keys)
                obj[k] = spoil(obj[k], bad)
            return obj
        if isinstance(obj, list | tuple) and obj:
            items = list(obj)
            i = gen.randrange(len(items))
            items[i] = spoil(items[i], bad)
            return type(obj)(items)
        return bad if isinstance(obj, float) else obj

    refused = 0
    for _ in range(3000):
        obj = tree(0)
        if gen.random() < 0.6:
            obj = spoil(obj, gen.choice([float("nan"), float("inf"), -float("inf"), np.float64("nan")]))
        try:
            _check_finite(obj, "")
            walk = True
        except ValueError:
            walk = False
        assert _finite(obj) is walk, obj
        try:
            dumps_obj(obj)
            dumped = True
        except ValueError:
            dumped = False
        assert dumped is walk, obj
        refused += not walk
    assert 300 < refused < 2000  # both kinds were tried
    with pytest.raises(ValueError, match=r"non-finite value inf at .a\[1\]\.b"):
        dumps_obj({"a": [1.0, {"b": float("inf")}]})


def test_numpy_scalars_serialise_as_numbers():
    import numpy as np

    raw = dumps(Prediction("s", 0, 0.0, 1, np.int64(1), float(np.float64(0.5)), 0))
    assert orjson.loads(raw)["y_pred"] == 1


@pytest.mark.parametrize("seq", [2**63, 10**19, -1])
def test_seq_outside_the_int64_range_is_refused(seq):
    with pytest.raises(SchemaMismatch, match=f"seq {seq} must be an integer in"):
        parse_feature_event(event(seq=seq), SPEC, where="f[0]@0")


def test_largest_int64_seq_is_valid():
    assert parse_feature_event(event(seq=2**63 - 1), SPEC, where="f[0]@0").seq == 2**63 - 1


@pytest.mark.parametrize("stream_id", ["", "a" * 129, "a b", "a/b", "é", "a\x00b", "x\n"])
def test_stream_id_outside_the_documented_set_is_refused(stream_id):
    with pytest.raises(SchemaMismatch, match="stream_id"):
        parse_feature_event(event(stream_id=stream_id), SPEC, where="f[0]@0")


@pytest.mark.parametrize("stream_id", ["a" * 128, "Sensor_7.eu-west:1@v2+x=y~z", "0"])
def test_stream_ids_of_the_documented_set_are_valid(stream_id):
    assert parse_feature_event(event(stream_id=stream_id), SPEC, where="f[0]@0").stream_id == stream_id


def test_error_messages_show_a_bounded_prefix_of_huge_values():
    with pytest.raises(SchemaMismatch) as info:
        parse_feature_event(event(stream_id="z" * 50_000), SPEC, where="f[0]@0")
    assert len(str(info.value)) < 500
    with pytest.raises(BadValue) as info:
        parse_feature_event(event(x={"a": "q" * 50_000, "b": 2.0, "c": "r"}), SPEC, where="f[0]@0", max_bytes=10**6)
    assert len(str(info.value)) < 500


@pytest.mark.parametrize("raw, byte, offset", [
    (b'{"schema": "feature_event/v1", "stream_id": "s\xff", "seq": 0}', "0xff", 46),
    (b'{"a": "caf\xe9 au lait"}', "0xe9", 10),         # Latin-1 text
    (b'{"a": "\xe2\x82"}', "0xe2", 7),                 # a UTF-8 sequence cut short
])
def test_bytes_that_are_not_utf8_are_named_with_their_offset(raw, byte, offset):
    # the error names the byte and where it is, not orjson's own message ("str is not valid
    # UTF-8: surrogates not allowed: line 1 column 1 (char 0)")
    with pytest.raises(MalformedMessage) as info:
        decode(raw, where="features[0]@3")
    err = str(info.value)
    assert err.startswith("features[0]@3: not UTF-8 text: byte " + byte + f" at offset {offset}"), err
    assert "surrogates" not in err and "encode the text as UTF-8" in err, err
    assert repr(raw[max(0, offset - 16):offset])[2:-1] in err, err  # what came before it, to find it


def test_a_block_of_increments_is_checked_alike_on_either_path():
    """parse_moments takes the usual block (an int n, float mean and m2, finite, m2 >= 0) at
    once and leaves anything else to the full check: the same value, or the same error."""
    import itertools

    from streamxai.schemas.parsing import parse_moments

    def full(obj):  # the full check alone: what the fast path stands for
        if isinstance(obj, dict) and set(obj) == {"n", "mean", "m2"}:
            n, mean, m2 = obj["n"], obj["mean"], obj["m2"]
            if (isinstance(n, int) and not isinstance(n, bool) and n >= 0
                    and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
                            for v in (mean, m2)) and m2 >= 0):
                return {"n": n, "mean": float(mean), "m2": float(m2)}
        return "refused"

    values = [0, 3, -1, True, 2.0, 0.5, -0.0, 0.0, -2.5, float("nan"), float("inf"), None, "1"]
    for n, mean, m2 in itertools.product(values, repeat=3):
        for obj in ({"n": n, "mean": mean, "m2": m2}, {"n": n, "mean": mean, "x": m2}):
            try:
                got = parse_moments(obj, "block", where="w")
            except SchemaMismatch:
                got = "refused"
            want = full(obj)
            assert repr(got) == repr(want) and (got == "refused" or all(type(got[k]) is type(want[k]) for k in got)), obj
    assert parse_moments(None, "block", where="w") is None
