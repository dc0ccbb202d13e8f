"""The results file a benchmark writes for the docs' performance page (``docs/results/<name>.json``,
format ``streamxai-bench/1``): what ran (command, time, Python, river, CPUs, load average), what
the baseline is, and one row per figure, each with its baseline from the same run and their ratio.
The docs' hook (``docs/hooks/generated.py``) reads these files and shows the newest numbers only.

"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path

FORMAT = "streamxai-bench/1"
#: where the docs' performance page looks for results files
RESULTS_DIR = Path(__file__).resolve().parents[2] / "docs" / "results"


def result_row(case: str, measure: str, value: float, unit: str, baseline: float | None = None) -> dict:
    """One figure: ``value`` of ``measure`` for ``case``, with its same-run ``baseline`` and the ratio."""
    if baseline is not None and baseline <= 0:
        raise ValueError(f"{case}/{measure}: baseline {baseline} must be above 0 to give a ratio")
    ratio = None if baseline is None else round(value / baseline, 3)
    return {"case": case, "measure": measure, "value": value, "unit": unit, "baseline": baseline, "ratio": ratio}


def write_results(path: Path | str, benchmark: str, title: str, baseline: str, rows: list[dict],
                  details: dict | None = None) -> Path:
    """Write the results file at ``path`` (replacing an older one) and return its path; ``details``:
    what a page built from the file shows beside the rows (settings, choices), kept as given."""
    try:
        import river

        river_version = river.__version__
    except ImportError:
        river_version = None
    doc = {
        "format": FORMAT,
        "benchmark": benchmark,
        "title": title,
        "command": " ".join(["python", *(Path(a).as_posix() if a.endswith(".py") else a for a in sys.argv)]),
        "written": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "environment": {
            "python": platform.python_version(),
            "river": river_version,
            "platform": platform.platform(terse=True),
            "cpus": os.cpu_count(),
            "load_average": [round(v, 1) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        },
        "baseline": baseline,
        "rows": rows,
    }
    if details is not None:
        doc["details"] = details
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path
