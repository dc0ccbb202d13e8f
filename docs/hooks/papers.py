"""The tables of the docs page "Reproducing the papers", built from ``docs/results/bench_papers.json``
(written by ``tests/benchmarks/bench_papers.py``): the papers' numbers and ours side by side, the
settings each row ran with, and the diagnostics that explain a difference, so none of it is typed by
hand. ``generated.py`` registers these builders under the markers ``papers-runs``, ``papers-summary``, ``papers-ipfi``,
``papers-ipfi-orders``, ``papers-ipfi-diagnostics``, ``papers-isage`` and ``papers-ipdp``."""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results" / "bench_papers.json"
FORMAT = "streamxai-bench/1"
PARTS = ("whole stream", "before drift", "after drift")

__all__ = ["BUILDERS", "load"]


def load(path: Path = RESULTS) -> dict | None:
    """The results file, or ``None`` when the benchmark has not written one."""
    if not path.exists():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    if doc.get("format") != FORMAT or "rows" not in doc:
        raise ValueError(f"{path}: not a results file of format {FORMAT!r}; write it with tests/benchmarks/bench_papers.py")
    return doc


def _missing(section: str) -> str:
    return (f"No {section} rows in `docs/results/bench_papers.json` yet. Run\n\n```bash\n"
            f".venv/bin/python tests/benchmarks/bench_papers.py --sections {section}\n```\n\nand build the docs again.\n")


def _f(v: object, digits: int = 3) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _n(v: object) -> str:
    return f"{v:,}" if isinstance(v, int) else "?"


def _rows(doc: dict | None, section: str) -> list[dict]:
    return [r for r in (doc or {}).get("rows", []) if r.get("section") == section]


def runs_md(path: Path = RESULTS) -> str:
    """Which command wrote which rows, when."""
    doc = load(path)
    if doc is None:
        return _missing("ipfi,isage,ipdp")
    env = doc["environment"]
    seen: dict[tuple[str, str, str], int] = {}
    for r in doc["rows"]:
        key = (r.get("section", ""), r.get("model", ""), f"`{r.get('command', doc['command'])}`, {r.get('written', doc['written'])}")
        seen[key] = seen.get(key, 0) + 1
    out = [f"Last written {doc['written']} (Python {env.get('python')}, river {env.get('river')}, "
           f"{env.get('cpus')} CPUs, load average {env.get('load_average')}).", "",
           "| section | model | rows | command, written |", "|---|---|---|---|"]
    out += [f"| {s} | {m} | {n} | {c} |" for (s, m, c), n in seen.items()]
    return "\n".join(out) + "\n"


#: the factor within which a number of ours counts as matching the paper's
WITHIN = 1.5


def summary_md(path: Path = RESULTS) -> str:
    """Per table and model: how many of our medians are within a factor of 1.5 of the paper's."""
    doc = load(path)
    if doc is None:
        return _missing("ipfi,isage,ipdp")
    groups: dict[tuple[str, str], list[float]] = {}
    for r in doc["rows"]:
        if r.get("ratio") is None or r.get("measure") not in ("Q2", "MAE", "MSE"):
            continue
        what = (f"iPFI Table 2, {r['setting']}" if r["section"] == "ipfi"
                else f"iSAGE Table 2, {r['measure']}, {r['method']}")
        groups.setdefault((what, r.get("model", "")), []).append(r["ratio"])
        if r.get("vs_gt_m1") is not None:
            groups.setdefault((f"{what}, against the GT of m = 1", r.get("model", "")), []).append(
                r["vs_gt_m1"] / r["baseline"])
    out = [f"| table | model | cells | ours within a factor of {WITHIN} of the paper's | median of ours / paper |",
           "|---|---|---|---|---|"]
    for (what, model), ratios in groups.items():
        n_in = sum(1 / WITHIN <= x <= WITHIN for x in ratios)
        mid = sorted(ratios)[len(ratios) // 2]
        out.append(f"| {what} | {model} | {len(ratios)} | {n_in} | {mid:.2f} |")
    return "\n".join(out) + "\n"


def ipfi_md(path: Path = RESULTS) -> str:
    """One table per setting and model: the paper's error quartiles and ours, part by part."""
    doc = load(path)
    rows = _rows(doc, "ipfi")
    if not rows:
        return _missing("ipfi")
    details = doc.get("details", {})  # type: ignore[union-attr]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["setting"], r["model"]), []).append(r)
    out = []
    for (setting, model), rs in groups.items():
        info = next((v for k, v in details.items() if k.startswith("ipfi |") and v.get("setting") == setting
                     and v.get("model") == model), {})
        out += [f"### {setting}, {model}", "",
                f"{info.get('what', '')}; {_n(info.get('events'))} events, drift at {_n(info.get('drift_at'))}, "
                f"prequential accuracy {_f(info.get('accuracy'))}, {info.get('seconds', '?')} s.", "",
                "| sampling | α | part | paper Q2 | ours Q2 | ours / paper | paper IQR | ours IQR "
                "| ours Q2 at the intervals' ends | against the covering interval | unnormalised | top-scaled |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        cell: dict[tuple, dict] = {}
        for r in rs:
            cell[(r["sampling"], r["alpha"], r["part"], r["series"], r["measure"])] = r
        keys = sorted({(r["sampling"], r["alpha"], r["part"]) for r in rs},
                      key=lambda k: (k[1], k[0] != "uniform", PARTS.index(k[2])))
        for smp, alpha, part in keys:
            q2 = cell.get((smp, alpha, part, "paper's error", "Q2"), {})
            iqr = cell.get((smp, alpha, part, "paper's error", "IQR"), {})
            ends = cell.get((smp, alpha, part, "at ends", "Q2 (at ends)"), {})
            raw = cell.get((smp, alpha, part, "unnormalised", "Q2 (unnormalised)"), {})
            cover = cell.get((smp, alpha, part, "covering", "Q2 (covering)"), {})
            scaled = cell.get((smp, alpha, part, "top-scaled", "Q2 (top-scaled)"), {})
            out.append(f"| {smp} | {alpha} | {part} | {_f(q2.get('baseline'))} | {_f(q2.get('value'))} | "
                       f"{_f(q2.get('ratio'), 2)} | {_f(iqr.get('baseline'))} | {_f(iqr.get('value'))} | "
                       f"{_f(ends.get('value'))} | {_f(cover.get('value'))} | {_f(raw.get('value'))} | "
                       f"{_f(scaled.get('value'))} |")
        out.append("")
    return "\n".join(out)


def ipfi_orders_md(path: Path = RESULTS) -> str:
    """Which sampling has the lower median error after the drift, the paper's and ours, with the
    gap between them (uniform's median over geometric's)."""
    doc = load(path)
    q2: dict[tuple, dict[str, dict]] = {}
    for r in _rows(doc, "ipfi"):
        if r["measure"] == "Q2" and r["series"] == "paper's error" and r["part"] == "after drift":
            q2.setdefault((r["setting"], r["model"], r["alpha"]), {})[r["sampling"]] = r
    if not q2:
        return _missing("ipfi")
    out = ["| setting | model | α | paper: uniform / geometric | lower | ours: uniform / geometric | lower | same |",
           "|---|---|---|---|---|---|---|---|"]
    for (setting, model, alpha), m in q2.items():
        u, g = m.get("uniform"), m.get("geometric")
        if not (u and g and u.get("baseline") and g.get("baseline") and g["value"] > 0):
            continue
        paper, ours = u["baseline"] / g["baseline"], u["value"] / g["value"]
        lower_p, lower_o = ("geometric" if x > 1 else "uniform" for x in (paper, ours))
        out.append(f"| {setting} | {model} | {alpha} | {paper:.2f} | {lower_p} | {ours:.2f} | {lower_o} | "
                   f"{'yes' if lower_p == lower_o else 'no'} |")
    return "\n".join(out) + "\n"


def ipfi_diagnostics_md(path: Path = RESULTS) -> str:
    """Per run: the storages' share of observations from the drift on, the features that make up the
    error after the drift, and the floors under it (interval PFI against itself)."""
    doc = load(path)
    details = (doc or {}).get("details", {})
    runs = [v for k, v in details.items() if k.startswith("ipfi |")]
    if not runs:
        return _missing("ipfi")
    out = ["| setting | model | interval PFI of the top feature, median before / after the drift "
           "| share from the drift on, uniform (first, last interval after it) | geometric "
           "| largest shares of the error after the drift, uniform | geometric "
           "| interval PFI against itself, Q2 before / after the drift: other permutations | the interval before |",
           "|---|---|---|---|---|---|---|---|---|"]
    for v in runs:
        ends, at = v.get("ends", []), v.get("drift_at", 0)
        after = [i for i, e in enumerate(ends) if e > at]
        share = v.get("drifted_share", {})
        cells = []
        for smp in ("uniform", "geometric"):
            s = share.get(smp, [])
            cells.append(", ".join(f"{s[i]:.2f} at {ends[i]:,}" for i in (after[:1] + after[-1:]) if i < len(s)))
        contrib = v.get("contributions_after_drift", {})
        tops = []
        for smp in ("uniform", "geometric"):
            top = sorted(contrib.get(smp, {}).items(), key=lambda kv: -kv[1])[:3]
            tops.append(", ".join(f"{f} {c:.3f}" for f, c in top))
        trace = v.get("trace", {})
        tops_ref = []
        for after_drift in (False, True):
            # trace rows: (event, interval PFI, iPFI uniform, iPFI geometric) at each interval's end
            per_end: dict[int, float] = {}
            for rows in trace.values():
                for e, ref, *_ in rows:
                    if (e > at) == after_drift:
                        per_end[e] = max(per_end.get(e, float("-inf")), ref)
            vals = sorted(per_end.values())
            tops_ref.append(_f(vals[len(vals) // 2]) if vals else "")
        floors = []
        for name in ("other permutations", "previous interval"):
            f = v.get("floors", {}).get(name, {})
            floors.append(" / ".join(_f((f.get(part) or [None])[0]) for part in ("before drift", "after drift"))
                          if f else "")
        out.append(f"| {v['setting']} | {v['model']} | {tops_ref[0]} / {tops_ref[1]} | {cells[0]} | {cells[1]} "
                   f"| {tops[0]} | {tops[1]} | {floors[0]} | {floors[1]} |")
    return "\n".join(out) + "\n"


def isage_md(path: Path = RESULTS) -> str:
    """Table 2's cells we ran: MAE and MSE, the paper's and ours, mean (std) over the runs."""
    doc = load(path)
    rows = _rows(doc, "isage")
    if not rows:
        return _missing("isage")
    info = doc.get("details", {}).get("isage", {})  # type: ignore[union-attr]
    cells: dict[tuple, dict] = {}
    for r in rows:
        cells.setdefault((r["scenario"], r["method"], r["window"]), {})[r["measure"]] = r
    out = [f"{_n(info.get('events'))} events a stream, {info.get('runs', '?')} runs a scenario (the paper: 20); "
           f"switches a run: " + "; ".join(f"{k} {v}" for k, v in info.get("switches", {}).items()) + ".", "",
           "| scenario | method | w | MAE paper | MAE ours | ours / paper | MSE paper | MSE ours | ours / paper "
           "| MAE against the GT of m = 1 | MSE against it |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (scenario, method, w), m in cells.items():
        mae, mse = m.get("MAE", {}), m.get("MSE", {})

        def both(r: dict, std_key: str) -> str:
            return f"{_f(r.get('value'))} ({_f(r.get(std_key))})" if r.get("value") is not None else ""

        paper_mae = f"{_f(mae.get('baseline'))} ({_f(mae.get('paper_std'))})" if mae.get("baseline") else ""
        paper_mse = f"{_f(mse.get('baseline'))} ({_f(mse.get('paper_std'))})" if mse.get("baseline") else ""
        out.append(f"| {scenario} | {method} | {w} | {paper_mae} | {both(mae, 'std')} | {_f(mae.get('ratio'), 2)} | "
                   f"{paper_mse} | {both(mse, 'std')} | {_f(mse.get('ratio'), 2)} | {_f(mae.get('vs_gt_m1'))} | "
                   f"{_f(mse.get('vs_gt_m1'))} |")
    truths, truths_m1 = info.get("truths", {}), info.get("truths_m1", {})
    se, se_m1 = info.get("gt_stderr_sum", []), info.get("gt_m1_stderr_sum", [])
    if truths:
        out += ["", "The ground truths: each pre-trained model's SAGE values (cross-entropy; |value| ≥ 0.01) with "
                "`m = 10` draws, as the paper's GT, and with `m = 1`, what an estimator of one draw converges to; "
                "beside each, its standard errors summed over the features.", "",
                "| river function | GT, m = 10 | summed standard error | m = 1 | summed standard error "
                "| sum of \\|m = 1 - m = 10\\| |",
                "|---|---|---|---|---|---|"]
        for i, (c, vals) in enumerate(truths.items()):
            m1 = truths_m1.get(c, {})
            out.append(f"| {c} | " + ", ".join(f"{f} {v:+.3f}" for f, v in vals.items() if abs(v) >= 0.01)
                       + f" | {_f(se[i] if i < len(se) else None)} | "
                       + ", ".join(f"{f} {v:+.3f}" for f, v in m1.items() if abs(v) >= 0.01)
                       + f" | {_f(se_m1[i] if i < len(se_m1) else None)} | "
                       + f"{_f(sum(abs(m1.get(f, 0.0) - v) for f, v in vals.items()) if m1 else None)} |")
    return "\n".join(out) + "\n"


def ipdp_md(path: Path = RESULTS) -> str:
    """At each checkpoint: iPDP against batch PD of the current model."""
    doc = load(path)
    rows = _rows(doc, "ipdp")
    if not rows:
        return _missing("ipdp")
    cells: dict[tuple, dict] = {}
    for r in rows:
        cells.setdefault((r["model"], r["feature"], r["event"], r["after_drift"]), {})[r["measure"]] = r["value"]
    # the curves themselves, to compare their shapes: each centred on its mean over the grid
    curves = {}
    for exp in doc.get("details", {}).get("ipdp", {}).values():  # type: ignore[union-attr]
        for c in exp.get("checkpoints", []) if isinstance(exp, dict) else []:
            a, b = c["ipdp"], c["batch"]
            ma, mb = sum(a) / len(a), sum(b) / len(b)
            curves[(c["feature"], c["event"])] = max(abs((x - ma) - (y - mb)) for x, y in zip(a, b, strict=True))
    out = ["| model (stream) | feature | event | after the drift | slope iPDP | slope batch PD | same sign "
           "| max \\|iPDP - batch PD\\| | the same, both curves centred | batch PD range |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for (model, feature, event, after), m in cells.items():
        si, sb = m.get("slope iPDP", 0.0), m.get("slope batch PD", 0.0)
        same = "flat" if si == 0 and sb == 0 else ("yes" if si * sb > 0 else "no")
        out.append(f"| {model} | {feature} | {event:,} | {'yes' if after else 'no'} | {si:+.2e} | {sb:+.2e} | {same} | "
                   f"{_f(m.get('max |iPDP - batch PD|'))} | {_f(curves.get((feature, event)))} | "
                   f"{_f(m.get('batch PD range'))} |")
    return "\n".join(out) + "\n"


BUILDERS = {
    "papers-runs": runs_md,
    "papers-summary": summary_md,
    "papers-ipfi": ipfi_md,
    "papers-ipfi-orders": ipfi_orders_md,
    "papers-ipfi-diagnostics": ipfi_diagnostics_md,
    "papers-isage": isage_md,
    "papers-ipdp": ipdp_md,
}
