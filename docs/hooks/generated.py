"""MkDocs hook that writes the reference pages from the code at build time: a page holds a marker
line such as ``<!-- generated: settings -->`` and :func:`on_page_markdown` replaces it with the
text built from ``streamxai.settings.Settings`` (``settings``), the argparse parser of
``streamxai.cli`` (``cli``), the JSON Schema files in ``schemas/json/`` (``schemas``) or the
benchmark results in ``docs/results/*.json`` (``performance``, and the sizing page's tables:
``sizing-cores``, ``sizing-workers``, ``sizing-groups``, ``sizing-memory``, ``sizing-limits``, ``sizing-soak``; the production
cluster page's ``chaos``; the papers page's tables, ``papers-*``, from ``hooks/papers.py``), so none of it is
typed by hand and none of it can drift from the code."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import math
import re
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "schemas" / "json"
RESULTS_DIR = ROOT / "docs" / "results"
RESULTS_FORMAT = "streamxai-bench/1"
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
#: benchmarks whose results files are not performance figures: each has a page of its own
OWN_PAGES = {"bench_papers"}


def _sibling(name: str):
    """The hook module ``name`` next to this one (MkDocs loads hooks by path, not as a package)."""
    spec = importlib.util.spec_from_file_location(f"docs_{name}", Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cell(text: object) -> str:
    """``text`` fit for one cell of a Markdown table."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def settings_md() -> str:
    from streamxai.settings import Settings, is_per_stream

    rows = ["| setting | default | per stream | meaning |", "|---|---|---|---|"]
    for f in dataclasses.fields(Settings):
        if f.metadata.get("secret"):
            default = "secret, not shown"
        else:
            value = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
            default = "`" + json.dumps(value) + "`" if value not in (None, "") else "(none)"
            if f.name == "model_params" and value is None:
                default = "(the model's, see meaning)"
        per_stream = "yes" if is_per_stream(f.name) and f.name != "streams" else ""
        rows.append(f"| `{f.name}` | {cell(default)} | {per_stream} | {cell(f.metadata['help'])} |")
    return "\n".join(rows) + "\n"


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    try:
        return text % {"default": action.default, "prog": "streamxai"}
    except (KeyError, TypeError, ValueError):
        return text


def _options(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| argument | default | meaning |", "|---|---|---|"]
    for a in parser._actions:  # argparse keeps its actions private; reading them is its own help's way
        if a.help == argparse.SUPPRESS or isinstance(a, argparse._HelpAction | argparse._SubParsersAction):
            continue
        name = ", ".join(a.option_strings) if a.option_strings else a.dest.upper()
        if a.metavar and a.option_strings:
            name += f" {a.metavar}"
        elif a.choices and a.option_strings:
            name += " {" + ",".join(map(str, a.choices)) + "}"
        default = "" if a.default in (None, False, [], argparse.SUPPRESS) or not a.option_strings else f"`{a.default}`"
        rows.append(f"| `{cell(name)}` | {cell(default)} | {cell(_help(a))} |")
    return rows


def cli_md() -> str:
    from streamxai import exit_codes
    from streamxai.cli import _parser

    top = _parser()
    out = []
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {a.dest: a.help for a in sub._choices_actions}
    out += ["| command | what it does |", "|---|---|"]
    out += [f"| [`streamxai {name}`](#streamxai-{name}) | {cell(summaries.get(name, ''))} |" for name in sub.choices]
    for name, parser in sub.choices.items():
        out += ["", f"## streamxai {name}", "", cell(summaries.get(name, "")), "", "```text",
                parser.format_usage().strip(), "```", ""]
        out += _options(parser)
    out += ["", "## Exit codes", "", exit_codes.HELP[len("exit codes: "):].capitalize() + "."]
    return "\n".join(out) + "\n"


def _type(prop: dict) -> str:
    if "const" in prop:
        return f"`{json.dumps(prop['const'])}`"
    if "enum" in prop:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in prop["enum"])
    for key in ("anyOf", "oneOf"):
        if key in prop:
            return " or ".join(_type(p) for p in prop[key])
    if "$ref" in prop:
        return f"see `{prop['$ref']}`"
    kind = prop.get("type", "any")
    kinds = kind if isinstance(kind, list) else [kind]
    if "array" in kinds and isinstance(prop.get("items"), dict):
        kinds = [f"array of {_type(prop['items'])}" if k == "array" else k for k in kinds]
    if "contentEncoding" in prop:  # bytes in a JSON string, e.g. a dead letter's original (base64)
        kinds = [f"string ({prop['contentEncoding']})" if k == "string" else k for k in kinds]
    return " or ".join(kinds)


def _limits(prop: dict) -> str:
    names = {"minimum": "≥", "maximum": "≤", "exclusiveMinimum": ">", "exclusiveMaximum": "<",
             "minLength": "length ≥", "maxLength": "length ≤", "pattern": "matches", "minItems": "items ≥",
             "maxItems": "items ≤"}
    return ", ".join(f"{label} `{prop[key]}`" for key, label in names.items() if key in prop)


def schemas_md(schema_dir: Path = SCHEMA_DIR) -> str:
    versions: dict[str, list[tuple[int, Path]]] = {}
    for path in sorted(schema_dir.glob("*.json")):
        name, _, version = path.stem.rpartition(".v")
        versions.setdefault(name, []).append((int(version), path))
    out = ["| message | current schema | other versions in `schemas/json/` |", "|---|---|---|"]
    for name, vs in sorted(versions.items()):
        vs.sort()
        older = ", ".join(f"v{v}" for v, _ in vs[:-1]) or ""
        out.append(f"| [`{name}`](#{name}) | `{name}/v{vs[-1][0]}` | {older} |")
    for name, vs in sorted(versions.items()):
        latest = vs[-1][1]
        doc = json.loads(latest.read_text(encoding="utf-8"))
        required = set(doc.get("required", []))
        out += ["", f"## {name}", "", f"`{latest.name}`: {cell(doc.get('title', ''))}", ""]
        if doc.get("description"):
            out += [cell(doc["description"]), ""]
        extra = doc.get("additionalProperties", True)
        out += ["| field | type | required | limits | meaning |", "|---|---|---|---|---|"]
        for field, prop in doc.get("properties", {}).items():
            out.append(f"| `{field}` | {cell(_type(prop))} | {'yes' if field in required else ''} | "
                       f"{cell(_limits(prop))} | {cell(prop.get('description', ''))} |")
        if extra is False:
            out += ["", "Fields not listed here are refused."]
    return "\n".join(out) + "\n"


def load_results(results_dir: Path = RESULTS_DIR) -> list[dict]:
    """The benchmark results files, each checked for the fields the performance page shows."""
    docs = []
    for path in sorted(results_dir.glob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as e:
            raise ValueError(f"{path}: not JSON ({e}); write it with tests/benchmarks/_results.py") from e
        if not isinstance(doc, dict) or doc.get("format") != RESULTS_FORMAT:
            raise ValueError(f"{path}: not a results file of format {RESULTS_FORMAT!r}; "
                             "write it with tests/benchmarks/_results.py")
        missing = {"benchmark", "title", "command", "written", "environment", "baseline", "rows"} - set(doc)
        if missing:
            raise ValueError(f"{path}: missing {sorted(missing)}; write it with tests/benchmarks/_results.py")
        docs.append(doc)
    return docs


def _number(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return "" if v is None else str(v)


def performance_md(results_dir: Path = RESULTS_DIR) -> str:
    docs = [d for d in load_results(results_dir) if d["benchmark"] not in OWN_PAGES]
    if not docs:
        return ("No results file is in `docs/results/` yet. A benchmark writes one when it runs, for example\n\n"
                "```bash\n.venv/bin/python tests/benchmarks/bench_speed.py\n```\n\n"
                "writes `docs/results/bench_speed.json`; build the docs again to see its numbers here.\n")
    out = []
    for doc in docs:
        env = doc["environment"]
        out += [f"## {doc['title']}", "",
                f"`{doc['command']}`, written {doc['written']} "
                f"(Python {env.get('python', '?')}, river {env.get('river', '?')}, {env.get('cpus', '?')} CPUs, "
                f"load average {env.get('load_average', '?')}).", "",
                f"Baseline: {doc['baseline']}", "",
                "| case | measure | value | unit | baseline | ratio |", "|---|---|---|---|---|---|"]
        for r in doc["rows"]:
            out.append(f"| {cell(r['case'])} | {cell(r['measure'])} | {_number(r['value'])} | {cell(r.get('unit', ''))} "
                       f"| {_number(r.get('baseline'))} | {_number(r.get('ratio'))} |")
        out.append("")
    return "\n".join(out)


#: the target rate of the sizing page's worked example, events per second over all streams
SIZING_TARGET = 10_000
#: spare capacity the worked example adds: for bursts, catch-up after a restart, and a worker down
SIZING_HEADROOM = 0.5
#: the soak's measure the worked example takes its long-run rate from (``bench_soak``)
SOAK_RATE = "events per CPU second"


def _results_of(benchmark: str, results_dir: Path) -> dict | None:
    """The results file ``benchmark`` wrote in ``results_dir``, or None if there is none."""
    return next((d for d in load_results(results_dir) if d["benchmark"] == benchmark), None)


def _written_by(doc: dict) -> str:
    env = doc["environment"]
    return (f"From `{doc['command']}`, written {doc['written']} ({env.get('cpus', '?')} CPUs, load average "
            f"{env.get('load_average', '?')}); baseline: {doc['baseline']}.")


def _missing(benchmark: str) -> str:
    return (f"No `docs/results/{benchmark}.json` yet. Run\n\n```bash\n.venv/bin/python tests/benchmarks/"
            f"{benchmark}.py\n```\n\nand build the docs again to see its table here.\n")


def _pivot(rows: list[dict], measures: list[str]) -> dict[str, dict[str, dict]]:
    """``{case: {measure: row}}`` of the rows with one of ``measures``, cases in their order."""
    out: dict[str, dict[str, dict]] = {}
    for r in rows:
        if r["measure"] in measures:
            out.setdefault(r["case"], {})[r["measure"]] = r
    return out


def _value(row: dict | None) -> str:
    return "" if row is None else _number(row["value"])


def sizing_cores_md(results_dir: Path = RESULTS_DIR) -> str:
    """Events per core of one worker by model and explainers, and the worked example built on them."""
    doc = _results_of("bench_scale", results_dir)
    per_core = "events/s per worker core"
    cases = _pivot(doc["rows"], [per_core, "events/s per core, broker included"]) if doc else {}
    if not cases:
        return _missing("bench_scale")
    out = [_written_by(doc), "", "| model, explainers | events/s per worker core | events/s per core, the broker's "
           "CPU included |", "|---|---|---|"]
    for case, m in cases.items():
        out.append(f"| {cell(case)} | {_value(m.get(per_core))} | {_value(m.get('events/s per core, broker included'))} |")
    soak = _results_of("bench_soak", results_dir)
    long_run = [r for r in soak["rows"] if r["measure"] == SOAK_RATE] if soak else []
    if long_run:
        # trees grow as they learn: a stream's first thousands of events cost less than its later ones
        case, rate = "the default settings (HAT, iPFI + iSAGE + iPDP)", long_run[-1]["value"]
        at = (f"the {_number(rate)} events per worker CPU second of the soak's last interval ({long_run[-1]['case']} "
              "over its streams, trees grown)")
    else:
        case, m = next(iter(cases.items()))
        rate = m[per_core]["value"]
        at = f"{_number(rate)} events/s per worker core (a young stream: a long run costs more an event)"
    need = SIZING_TARGET / rate
    out += ["", f"For example, {SIZING_TARGET:,} events/s of {case} need {need:.1f} cores of workers at {at}; with "
            f"{SIZING_HEADROOM:.0%} headroom, {math.ceil(need * (1 + SIZING_HEADROOM))}."]
    return "\n".join(out) + "\n"


def _scaling_md(groups: bool, results_dir: Path) -> str:
    """The scaling rows of bench_scale: explain groups' (``groups``) or the workers' against
    partitions and streams, each with one worker's rate from the same run."""
    doc = _results_of("bench_scale", results_dir)
    allow, split = "ratio the cores allow at its CPU per event", "ratio the split allows"
    busy = "cores busy: workers, broker, others"
    cases = {c: m for c, m in _pivot(doc["rows"], ["events/s", allow, split, busy]).items()
             if c.startswith("one stream, ") == groups and m["events/s"].get("baseline")} if doc else {}
    if not cases:
        return _missing("bench_scale")
    out = [_written_by(doc), "", "| case | events/s | one worker's events/s | ratio | ratio the cores allow | "
           "ratio the split allows | cores busy |", "|---|---|---|---|---|---|---|"]
    for case, m in cases.items():
        r, cores = m["events/s"], m.get(busy)
        out.append(f"| {cell(case)} | {_value(r)} | {_number(r['baseline'])} | {_number(r['ratio'])} | "
                   f"{_value(m.get(allow))} | {_value(m.get(split))} | "
                   f"{_value(cores)}{' ' + cell(cores['unit']) if cores else ''} |")
    return "\n".join(out) + "\n"


def sizing_workers_md(results_dir: Path = RESULTS_DIR) -> str:
    """Events/s with more workers against partitions and streams, each against one worker."""
    return _scaling_md(False, results_dir)


def sizing_groups_md(results_dir: Path = RESULTS_DIR) -> str:
    """Events/s of one busy stream with explain groups over workers, against one worker and one group."""
    return _scaling_md(True, results_dir)


#: the words of the measures of ``bench_streams`` that the sizing page shows apart from memory and
#: rates (``sizing-limits``): a stop, the disk, the limit on live streams
LIMIT_WORDS = ("stop", "disk", "previous", "peak", "left to replay", "max_live_streams")


def _of_limits(row: dict) -> bool:
    return any(w in row["measure"] or w in row["case"] for w in LIMIT_WORDS)


def sizing_memory_md(results_dir: Path = RESULTS_DIR) -> str:
    """Memory per stream and events/s with many streams on one worker (``bench_streams``)."""
    doc = _results_of("bench_streams", results_dir)
    return _table_of(doc, keep=lambda r: not _of_limits(r)) if doc else _missing("bench_streams")


def sizing_limits_md(results_dir: Path = RESULTS_DIR) -> str:
    """With many streams on one worker (``bench_streams``): its stop against ``shutdown_timeout_s``,
    its checkpoints on disk per stream, and its peak memory under ``max_live_streams`` against that
    many streams without the limit."""
    doc = _results_of("bench_streams", results_dir)
    if not doc:
        return _missing("bench_streams")
    out = [_written_by(doc), "", "| case | measure | value | baseline | ratio |", "|---|---|---|---|---|"]
    for r in doc["rows"]:
        if _of_limits(r):
            unit = f" {cell(r['unit'])}" if r.get("unit") else ""
            base = "" if r.get("baseline") is None else _number(r["baseline"]) + unit
            ratio = "" if r.get("ratio") is None else _number(r["ratio"])
            out.append(f"| {cell(r['case'])} | {cell(r['measure'])} | {_value(r)}{unit} | {base} | {ratio} |")
    return "\n".join(out) + "\n"


def sizing_soak_md(results_dir: Path = RESULTS_DIR) -> str:
    """One worker's memory, throughput and checkpoints over a soak (``bench_soak``), its verdict in the title."""
    doc = _results_of("bench_soak", results_dir)
    return _table_of(doc, intro=f"{doc['title']}.") if doc else _missing("bench_soak")


def chaos_md(results_dir: Path = RESULTS_DIR) -> str:
    """The chaos benchmark's verdict (``bench_chaos``): per output topic its messages, duplicates,
    missing and mismatched ones, the verdict and the faults in the title and baseline."""
    doc = _results_of("bench_chaos", results_dir)
    return _table_of(doc, intro=f"{doc['title']}.") if doc else _missing("bench_chaos")


def chaos_rebalance_md(results_dir: Path = RESULTS_DIR) -> str:
    """The rebalance run of the chaos benchmark (``bench_chaos_rebalance``) in three tables: per
    output topic its counts and the pages; per fault the longest wait for a stream's next
    prediction; per worker its rebalances and longest recovery, with the faults and the workers
    that exited by themselves."""
    doc = _results_of("bench_chaos_rebalance", results_dir)
    if not doc:
        return ("No `docs/results/bench_chaos_rebalance.json` yet. Run\n\n```bash\n.venv/bin/python "
                "tests/benchmarks/bench_chaos.py --nodes 3 --workers 3 --minutes 10 --rate 40 "
                "--results docs/results/bench_chaos_rebalance.json\n```\n\nand build the docs again to see its "
                "tables here.\n")
    counts = [r for r in doc["rows"] if r.get("unit") == "messages"]
    waits = [r for r in doc["rows"] if r["measure"] == "longest wait for a stream's next prediction"]
    rest = [r for r in doc["rows"] if r not in counts and r not in waits]
    return "\n".join(_table_of({**doc, "rows": rows}, intro=f"{doc['title']}." if i == 0 else "", written=i == 0)
                     for i, rows in enumerate((counts, waits, rest)) if rows)


def _table_of(doc: dict, intro: str = "", written: bool = True, keep: Callable[[dict], bool] | None = None) -> str:
    """The rows of a benchmark's results ``doc`` (those ``keep`` keeps) as a table: a line per
    case, a column per measure (after the line that says where they come from, unless
    ``written`` is false)."""
    rows = [r for r in doc["rows"] if keep is None or keep(r)]
    measures = list(dict.fromkeys(r["measure"] for r in rows))
    units = {r["measure"]: r.get("unit", "") for r in rows}
    header = "| case | " + " | ".join(cell(f"{m} ({units[m]})" if units[m] else m) for m in measures) + " |"
    out = (([intro, ""] if intro else []) + ([_written_by(doc), ""] if written else [])
           + [header, "|---|" + "---|" * len(measures)])
    for case, m in _pivot(rows, measures).items():
        out.append(f"| {cell(case)} | " + " | ".join(_value(m.get(x)) for x in measures) + " |")
    return "\n".join(out) + "\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "settings": settings_md,
    "cli": cli_md,
    "schemas": schemas_md,
    "performance": performance_md,
    "sizing-cores": sizing_cores_md,
    "sizing-workers": sizing_workers_md,
    "sizing-groups": sizing_groups_md,
    "sizing-memory": sizing_memory_md,
    "sizing-limits": sizing_limits_md,
    "sizing-soak": sizing_soak_md,
    "chaos": chaos_md,
    "chaos-rebalance": chaos_rebalance_md,
    **_sibling("papers").BUILDERS,
}


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 - MkDocs' hook signature
    def replace(m: re.Match) -> str:
        if m.group(1) not in GENERATORS:
            raise ValueError(f"{page.file.src_uri}: unknown generated section {m.group(1)!r}; "
                             f"known: {sorted(GENERATORS)}")
        return GENERATORS[m.group(1)]()

    return MARKER.sub(replace, markdown)
