"""Exact ground truth for agrawal classification function 1 (river index 1) as a frozen model.

>>> truth = exact_sage("brier_of", f1_grid)
>>> round(truth["salary"], 3), round(truth["age"], 3), truth["car"]
(0.151, 0.086, 0.0)
"""

from __future__ import annotations

import numpy as np

__all__ = ["AGRAWAL", "AGES", "SALARIES", "agrawal_f1", "value_of", "f1_grid", "losses_on_grid", "exact_sage"]

AGRAWAL = ["salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan"]

AGES = np.arange(20, 81, dtype=float)[:, None]                 # 61 x 1
SALARIES = (20000 + 10 * (np.arange(13000) + 0.5))[None, :]    # 1 x 13000


def agrawal_f1(x):
    """River's classification function 1 (the frozen model; reads ``age`` on 20..80 and ``salary`` on [20k, 150k]):
    other features' SAGE values are 0, the two-player Shapley formula gives the rest, on an age and salary
    grid exact for the 0/1 model (below 1e-6 off for ``0.1 + 0.8 f1``)."""
    age, salary = x["age"], x["salary"]
    if age < 40:
        return 1 if 50000 <= salary <= 100000 else 0
    if age < 60:
        return 1 if 75000 <= salary <= 125000 else 0
    return 1 if 25000 <= salary <= 75000 else 0


def value_of(x):
    """The model's output as a number (module-level, so that explainers holding it pickle)."""
    return float(agrawal_f1(x))


def f1_grid(age, salary):
    """:func:`agrawal_f1` on numpy grids of ``age`` and ``salary``."""
    young = (age < 40) & (salary >= 50000) & (salary <= 100000)
    mid = (age >= 40) & (age < 60) & (salary >= 75000) & (salary <= 125000)
    old = (age >= 60) & (salary >= 25000) & (salary <= 75000)
    return (young | mid | old).astype(float)


def losses_on_grid(loss: str, y, p):
    """Vectorised loss of the predicted probability ``p`` of class 1 for labels ``y``."""
    if loss in ("squared", "brier_of"):
        return (y - p) ** 2
    if loss == "brier":
        return 2 * (y - p) ** 2
    if loss == "absolute":
        return np.abs(y - p)
    if loss == "cross_entropy":
        q = np.clip(np.where(y == 1, p, 1 - p), 1e-7, 1 - 1e-7)
        return -np.log(q)
    raise ValueError(loss)


def exact_sage(loss: str, model_grid) -> dict[str, float]:
    """Every agrawal feature's SAGE value of ``model_grid`` (a function of the age and salary
    grids giving the probability of class 1) under ``loss``, labels from :func:`f1_grid`."""
    y = f1_grid(AGES, SALARIES)
    p = model_grid(AGES, SALARIES) * np.ones_like(y)
    restricted = {
        (): np.full_like(y, p.mean()),
        ("salary",): np.broadcast_to(p.mean(axis=0, keepdims=True), y.shape),
        ("age",): np.broadcast_to(p.mean(axis=1, keepdims=True), y.shape),
        ("age", "salary"): p,
    }
    v = {s: float(losses_on_grid(loss, y, r).mean()) for s, r in restricted.items()}
    out = dict.fromkeys(AGRAWAL, 0.0)
    out["salary"] = 0.5 * ((v[()] - v[("salary",)]) + (v[("age",)] - v[("age", "salary")]))
    out["age"] = 0.5 * ((v[()] - v[("age",)]) + (v[("salary",)] - v[("age", "salary")]))
    return out
