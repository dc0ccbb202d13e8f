"""The drifting streams of the iPFI paper's Table 2 (its supplement), as the benchmark
``bench_papers.py`` runs them: agrawal with a function drift (the generator's classification
function switched) or a feature drift (the values of pairs of features exchanged), and elec2 with
a feature drift (``_elec2.py``).

River numbers agrawal's classification functions from 0: its function 0 is ``age < 40 or age >= 60``,
its function 1 the age-and-salary concept the paper calls concept 1 (the supplement's Class A), its
function 2 the age-and-education concept the paper calls concept 2. The functions below take
river's indices.

>>> events = list(agrawal_function_drift(1, 2, at=3, n=6, seed=1))
>>> len(events), sorted(events[0][0]) == sorted(AGRAWAL_FEATURES)
(6, True)
>>> x, _ = next(iter(agrawal_feature_drift(2, (("age", "salary"),), at=0, n=1, seed=1)))
>>> 20 <= x["salary"] <= 80          # salary now carries the ages
True
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from river.datasets import synth

__all__ = ["AGRAWAL_FEATURES", "agrawal_function_drift", "agrawal_feature_drift"]

AGRAWAL_FEATURES = ("salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan")


def agrawal_function_drift(before: int, after: int, at: int, n: int, seed: int) -> Iterator[tuple[dict, int]]:
    """``n`` agrawal events labelled by river's function ``before`` until event ``at``, then by
    ``after`` (the same distribution of the features: only the concept changes)."""
    first = synth.Agrawal(classification_function=before, seed=seed)
    second = synth.Agrawal(classification_function=after, seed=seed + 1)
    yield from itertools.islice(first, at)
    yield from itertools.islice(second, n - at)


def agrawal_feature_drift(function: int, swaps: Sequence[tuple[str, str]], at: int, n: int,
                          seed: int) -> Iterator[tuple[dict, int]]:
    """``n`` agrawal events of river's function ``function``; from event ``at`` on, the values of
    each pair in ``swaps`` exchanged in the observation (the label stays the one of the original
    values, so the observed concept changes with the features' distribution)."""
    for t, (x, y) in enumerate(itertools.islice(synth.Agrawal(classification_function=function, seed=seed), n)):
        if t >= at:
            x = dict(x)
            for a, b in swaps:
                x[a], x[b] = x[b], x[a]
        yield x, y
