"""The papers' own tables, reproduced: ours beside the published numbers, row by row (run on demand).

    python tests/benchmarks/bench_papers.py [--quick] [--sections ipfi,isage,ipdp] [--models hat]

- ``ipfi``: the iPFI supplement's Table 2 (``_papers_ipfi.py``): agrawal with a function drift
  (fu. 1, fu. 2) and a feature drift (fe. 1), uniform and geometric sampling, ``alpha`` 0.001 and
  0.01; elec2 with a feature drift (fe. 1, sudden and gradual); the error's quartiles over the whole
  stream, before and after the drift. Beside the paper's error: the same error at the intervals' ends
  only, and the unnormalised sum of ``|iPFI - interval PFI|`` (what the min-max normalisation hides);
  and the floors under it: interval PFI against itself with other permutations and against the
  interval before.
- ``isage``: the iSAGE paper's Tables 1 and 2 (``_papers_isage.py``): iSAGE against SW-SAGE on
  ground-truth streams of switching pre-trained models, MSE and MAE.
- ``ipdp``: the iPDP paper's claims about tracking partial dependence after a drift
  (``_papers_ipdp.py``), against batch PD of the current model.

Each section writes its rows into ``docs/results/bench_papers.json`` (other sections' rows and
other models' rows are kept), from which the docs page "Reproducing the papers" is built. Seeds are
fixed. The paper's model for iPFI is an ARF of 50 trees (``--models arf50``), which costs about an
hour on elec2 alone; the default is the product's default model, a Hoeffding adaptive tree.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parents[1]))
sys.path.insert(0, str(_HERE))

from _papers_ipdp import run_ipdp_claims  # noqa: E402
from _papers_isage import run_isage_tables  # noqa: E402
from _papers_run_ipfi import run_ipfi_table  # noqa: E402
from _results import RESULTS_DIR, write_results  # noqa: E402

SECTIONS = ("ipfi", "isage", "ipdp")
RESULTS = RESULTS_DIR / "bench_papers.json"


def _merge(path: Path, fresh: list[dict]) -> tuple[list[dict], dict]:
    """The rows of the results file at ``path`` not replaced by this run (a section, model and
    setting that ran replaces its rows), then ``fresh``; and the details of the sections kept."""
    if not path.exists():
        return fresh, {}
    ran = {(r.get("section"), r.get("model"), r.get("setting")) for r in fresh}
    old = json.loads(path.read_text(encoding="utf-8"))
    kept = [r for r in old.get("rows", []) if (r.get("section"), r.get("model"), r.get("setting")) not in ran]
    return kept + fresh, old.get("details", {})


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Default run: about 25 minutes of one core (iSAGE 8 of them); --quick: about 2.")
    p.add_argument("--quick", action="store_true", help="shorter streams and fewer runs (a smoke run)")
    p.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated: {', '.join(SECTIONS)}")
    p.add_argument("--models", default="hat",
                   help="iPFI's models, comma-separated: hat (default), arf10, arf50 (the paper's)")
    p.add_argument("--settings", default=None,
                   help="iPFI's settings, comma-separated (default: fu1, fu2, fe1, elec2, elec2-gradual, "
                        "elec2-calendar; also: elec2-period, elec2-nswdemand, elec2-transfer, nswprice swapped with "
                        "another feature; elec2-frozen, the model frozen from event 28,000)")
    p.add_argument("--realizations", type=int, default=10,
                   help="iPFI's M, realizations averaged per event and feature (default 10, the paper's)")
    p.add_argument("--permutations", type=int, default=10,
                   help="interval PFI's permutations per interval (default 10, the paper's)")
    p.add_argument("--interval", type=int, default=2_000,
                   help="interval PFI's events per interval (default 2,000, the window of alpha 0.001)")
    p.add_argument("--loss", default="zero_one", choices=("zero_one", "proba"),
                   help="iPFI's and interval PFI's loss: zero_one (default, the paper's ||h(x) - y|| on labels) or "
                        "proba (|P(1) - y|, the same on the probability)")
    p.add_argument("--runs", type=int, default=None, help="iSAGE: runs per scenario (default 3; the paper's 20)")
    p.add_argument("--full", action="store_true",
                   help="iSAGE: all four windows and SW-SAGE at 20, 10, 5, 2 and 1 times iSAGE's cost")
    p.add_argument("--results", default=str(RESULTS), help="results file ('' to print only)")
    a = p.parse_args(argv)
    sections = [s.strip() for s in a.sections.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        p.error(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    start, cpu = time.perf_counter(), time.process_time()
    rows: list[dict] = []
    details: dict = {}
    if "ipfi" in sections:
        models = [m.strip() for m in a.models.split(",") if m.strip()]
        settings = a.settings.split(",") if a.settings else None
        got, info = run_ipfi_table(models, settings=settings, quick=a.quick, realizations=a.realizations,
                                   permutations=a.permutations, interval=a.interval, loss=a.loss)
        rows += got
        details.update(info)
    if "isage" in sections:
        got, info = run_isage_tables(runs=a.runs, quick=a.quick, full=a.full)
        rows += got
        details.update(info)
    if "ipdp" in sections:
        got, info = run_ipdp_claims(quick=a.quick)
        rows += got
        details.update(info)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    for r in rows:  # rows of several runs share the file: each says which command wrote it
        r.setdefault("written", stamp)
        r.setdefault("command", " ".join(["python", *sys.argv]))
    print(f"\ntotal wall time {time.perf_counter() - start:.0f} s, CPU time {time.process_time() - cpu:.0f} s "
          "(the machine's other load stretches the first, not the second)")
    if a.results and not a.quick:
        merged, old_details = _merge(Path(a.results), rows)
        path = write_results(a.results, "bench_papers", "The papers' tables, reproduced",
                             "the paper's published number (ratio: ours over the paper's)", merged,
                             details={**old_details, **details})
        print(f"results: {path}")


if __name__ == "__main__":
    main()
