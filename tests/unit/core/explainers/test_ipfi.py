"""iPFI against the paper (Algorithm 1, Eq. 3, Theorems 1-3, the agrawal ground truth) and the explainer
protocol. Tolerances are fixed from the paper's variance results or the spread measured over seeds
(recorded at each test), never tuned: with ``V1 = Var_s[E_r f(Z_s, Z_r)]``, ``V2 = E_s[Var_r f(Z_s, Z_r)]``
and ``M`` realizations, the smoothed estimate has sd about ``sqrt(alpha / (2 - alpha) * (V1 + V2 / M))``
(Theorem 3, Prop. 2)."""

from __future__ import annotations

import itertools
import math
import random
import statistics

import pytest
from river import forest, linear_model, optim, preprocessing, tree
from river.datasets import synth
from streamxai.core.batch.pfi import IntervalPFI, batch_pfi, pfi_error
from streamxai.core.explainers import IPFI
from streamxai.core.model import ModelFunction
from streamxai.core.storage import GeometricReservoir, UniformReservoir

NAMES = ["salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan"]


def agrawal_f1(x: dict) -> int:
    """river's ``Agrawal._classification_function_1`` (river 0.26.1), written out."""
    age, salary = x["age"], x["salary"]
    if age < 40:
        return int(50000 <= salary <= 100000)
    if age < 60:
        return int(75000 <= salary <= 125000)
    return int(25000 <= salary <= 75000)


# Ground truth (supplement, "Ground-truth PFI for the agrawal stream"), 0-1 loss, labels =
# model. Salary is U[20k, 150k] and each age band accepts a salary interval of 50k, so a
# fresh salary flips the class with 2 * 5/13 * 8/13 = 80/169 = 0.4734 in every band.
SALARY_PFI = 80 / 169
# Age: the paper takes age ~ U[20, 80] (bands of 1/3 each) and gets 40/117 = 0.3419. river
# draws age = randint(20, 80), bands of 20/61, 20/61, 21/61; the same derivation
# (salary segments where exactly one band differs) gives
# (100/130) * (q2 (1 - q2) + q3 (1 - q3)) = 0.3432 (Monte Carlo, 2e6 draws: 0.3436 +- 0.0003).
AGE_PFI = (100 / 130) * ((20 / 61) * (41 / 61) + (21 / 61) * (40 / 61))
PAPER_AGE_PFI = 40 / 117


@pytest.fixture(scope="module")
def agrawal1() -> tuple[list[dict], list[int]]:
    data = list(synth.Agrawal(classification_function=1, seed=42).take(20_000))
    return [x for x, _ in data], [y for _, y in data]


@pytest.fixture(scope="module")
def agrawal1_batch(agrawal1) -> dict[str, float]:
    X, y = agrawal1
    return batch_pfi(ModelFunction(agrawal_f1), "zero_one", X, y, n_repeats=10, seed=0)


@pytest.fixture(scope="module")
def agrawal1_ipfi(agrawal1) -> dict[str, dict[str, float]]:
    """The paper's Table 1 protocol: alpha = 0.001, ten realizations, whole stream once."""
    X, y = agrawal1
    out = {}
    for storage in ("geometric", "uniform"):
        ipfi = IPFI(
            ModelFunction(agrawal_f1),
            "zero_one",
            NAMES,
            alpha=0.001,
            n_samples=10,
            storage=storage,
            seed=11,
        )
        for x, yi in zip(X, y, strict=True):
            ipfi.explain_one(x, yi)
        out[storage] = ipfi.values
    return out


# --- analytic ground truth -------------------------------------------------------------


def test_callable_is_rivers_function_1(agrawal1):
    X, y = agrawal1
    assert all(agrawal_f1(x) == yi for x, yi in zip(X, y, strict=True))
    assert abs(AGE_PFI - PAPER_AGE_PFI) < 0.0015  # discrete vs continuous age


@pytest.mark.parametrize("storage", ["geometric", "uniform"])
@pytest.mark.slow
def test_ipfi_converges_to_analytic_agrawal_pfi(agrawal1_ipfi, storage):
    values = agrawal1_ipfi[storage]
    # alpha = 0.001, M = 10: V1 = 0.0126 (salary) / 0.034 (age), V2 = 0.237, so the O(alpha)
    # term gives sd ~ sqrt(0.0005 * (0.034 + 0.024)) = 0.0054 for age. Measured over 8
    # orderings of these events (L = 100): sd <= 0.0042, max |error| 0.0098 (both storages).
    # 0.025 is ~4.6 predicted sd.
    assert abs(values["salary"] - SALARY_PFI) < 0.025
    assert abs(values["age"] - AGE_PFI) < 0.025
    # the model ignores every other feature, so every increment is exactly 0
    assert all(values[f] == 0.0 for f in NAMES if f not in ("salary", "age"))


@pytest.mark.slow
def test_batch_pfi_matches_analytic_agrawal_pfi(agrawal1, agrawal1_batch):
    # Eq. 3 over N = 20k with 10 permutations: U-statistic sd sqrt(4 sigma_1^2 / N) ~ 0.003
    # plus permutation noise sqrt(V2 / (N M)) ~ 0.001. Measured (N = 10k, 5 permutations,
    # 6 seeds): sd <= 0.0032, max |error| 0.0054. 0.015 is > 4 sd.
    assert abs(agrawal1_batch["salary"] - SALARY_PFI) < 0.015
    assert abs(agrawal1_batch["age"] - AGE_PFI) < 0.015
    assert all(agrawal1_batch[f] == 0.0 for f in NAMES if f not in ("salary", "age"))


def test_exact_batch_pfi_matches_analytic_agrawal_pfi(agrawal1):
    X, y = agrawal1
    X, y = X[:300], y[:300]
    exact = batch_pfi(ModelFunction(agrawal_f1), "zero_one", X, y, n_repeats=None)
    # U-statistic, V = O(1/N) (supplement): measured over 12 samples of N = 300:
    # sd 0.005 (salary), 0.009 (age), max |error| 0.025. 0.045 is 5 sd of age.
    assert abs(exact["salary"] - SALARY_PFI) < 0.045
    assert abs(exact["age"] - AGE_PFI) < 0.045
    assert all(exact[f] == 0.0 for f in NAMES if f not in ("salary", "age"))


# Table 1, agrawal: median error 0.010 (IQR 0.006) geometric, 0.011 (IQR 0.006) uniform over
# ten orderings (the model there is an LGBM at 99 % accuracy; ours is the concept itself).
# One ordering is at the paper's level when it is no outlier of the paper's distribution:
# <= Q3 + 1.5 IQR <= median + 2.5 IQR. Measured with this protocol over 8 orderings:
# geometric median 0.005 (max 0.015), uniform median 0.010 (max 0.022), i.e. medians at or
# below the paper's.
PAPER_TABLE1_AGRAWAL = {"geometric": 0.010 + 2.5 * 0.006, "uniform": 0.011 + 2.5 * 0.006}


@pytest.mark.parametrize("storage", ["geometric", "uniform"])
@pytest.mark.slow
def test_ipfi_agrees_with_batch_pfi_at_paper_level(agrawal1_ipfi, agrawal1_batch, storage):
    err = pfi_error(agrawal1_ipfi[storage], agrawal1_batch)
    assert err <= PAPER_TABLE1_AGRAWAL[storage]


# --- Theorem 1: the N / (N - 1) scaling -------------------------------------------------


def _lin(x: dict) -> float:
    return x["a"] + 2.0 * x["b"]


def test_exact_pfi_is_scaled_expectation_over_all_permutations():
    rng = random.Random(5)
    X = [{"a": rng.random(), "b": rng.random()} for _ in range(5)]
    y = [_lin(x) + rng.gauss(0, 0.3) for x in X]
    f = ModelFunction(_lin, output="value")
    exact = batch_pfi(f, "squared", X, y, n_repeats=None)
    n = len(X)
    for feat in ("a", "b"):
        per_perm = []
        for perm in itertools.permutations(range(n)):
            lam = 0.0
            for i, j in enumerate(perm):
                row = dict(X[i])
                row[feat] = X[j][feat]
                lam += (y[i] - _lin(row)) ** 2 - (y[i] - _lin(X[i])) ** 2
            per_perm.append(lam / n)
        expected = n / (n - 1) * statistics.fmean(per_perm)  # Theorem 1 / Eq. 4
        assert exact[feat] == pytest.approx(expected, rel=1e-12, abs=1e-12)
        # Eq. 3 with R sampled permutations is unbiased for it; sd of the mean is
        # n/(n-1) * sd(per_perm) / sqrt(R). Without the scaling it would sit at 0.8x.
        sampled = batch_pfi(f, "squared", X, y, features=[feat], n_repeats=4000, seed=2)
        sd = n / (n - 1) * statistics.pstdev(per_perm) / math.sqrt(4000)
        assert abs(sampled[feat] - expected) < 4 * sd
        assert abs(sampled[feat] - (n - 1) / n * expected) > 4 * sd


# --- smoothing start (t0) ---------------------------------------------------------------


def test_smoothing_starts_with_first_increment_so_static_estimate_is_unbiased():
    """phi_t0 := lambda_t0: E[phi_t] = PFI after a few events, not (1 - (1 - alpha)^(t - t0 + 1)) PFI (Theorem 2's bias)."""
    alpha, events, runs = 0.1, 6, 1000
    finals = []
    for seed in range(runs):
        rng = random.Random(10_000 + seed)
        ipfi = IPFI(ModelFunction(agrawal_f1), "zero_one", ["salary", "age"], alpha=alpha, seed=seed)
        for _ in range(events):
            x = {"salary": 20000 + 130000 * rng.random(), "age": rng.randint(20, 80)}
            ipfi.explain_one(x, agrawal_f1(x))
        assert ipfi.n_explained == events - 1
        finals.append(ipfi.values["salary"])
    mean = statistics.fmean(finals)
    se = statistics.pstdev(finals) / math.sqrt(runs)  # measured spread of the runs
    zero_start = (1 - (1 - alpha) ** (events - 1)) * SALARY_PFI
    assert abs(mean - SALARY_PFI) < 4 * se
    assert abs(mean - zero_start) > 8 * se


def test_first_event_only_fills_the_storage():
    f = ModelFunction(agrawal_f1)
    ipfi = IPFI(f, "zero_one", NAMES, seed=1)
    x = {n: 1.0 for n in NAMES}
    assert ipfi.explain_one(x, 0) == {n: 0.0 for n in NAMES}
    assert (ipfi.n_explained, f.n_evaluations) == (0, 0)
    ipfi.explain_one(x, 0)
    assert ipfi.n_explained == 1


# --- frozen river models against batch PFI ----------------------------------------------


def _frozen(kind: str):
    if kind == "hoeffding_tree":
        fn = 2  # age and education level
        model = tree.HoeffdingTreeClassifier(leaf_prediction="mc", grace_period=50)
    elif kind == "arf":
        fn = 2  # three trees keep the test's model cost to ~15 s; accuracy 0.92 after 5000 events
        model = forest.ARFClassifier(n_models=3, seed=1, grace_period=50)
    else:
        fn = 6  # linear in salary, commission, loan: a problem a linear model can learn
        model = preprocessing.StandardScaler() | linear_model.LogisticRegression(optimizer=optim.SGD(0.1))
    for x, y in synth.Agrawal(classification_function=fn, seed=100).take(5000):
        model.learn_one(x, y)
    data = list(synth.Agrawal(classification_function=fn, seed=200).take(6000))
    return model, [x for x, _ in data], [y for _, y in data]


# Setting: the frozen model explains 6000 fresh events once (alpha = 0.001, M = 1, L = 1000);
# the reference is Eq. 3 with 3 permutations over the same events. Both estimate the same
# PFI; their difference is dominated by the O(alpha) term of Theorem 3: per-event variance
# V1 + V2 = 0.085 + 0.185 (HT, age and elevel; logistic regression: loan 0.06 + 0.22), so
# sd ~ sqrt(0.0005 * 0.27) = 0.012 per feature, plus ~0.003 of permutation noise. The Table 1
# metric divides by the spread of the vector: for the tree the error is essentially the error
# of the ratio age / elevel, ~0.8 * sqrt(2) * 0.012 / 0.33 = 0.04.
# Measured over 10 seeds (data, iPFI and permutations): max per-feature deviation 0.028;
# Table 1 error median 0.038 / max 0.120 (tree), median 0.059 / max 0.077 (logistic).
# This is above the paper's 0.011 for agrawal because these models have a larger V1 than
# the concept (0.085 vs 0.013 / 0.034) and the stream is shorter with M = 1 (the paper:
# 20k events, M = 10); at the paper's own protocol see test_ipfi_agrees_with_batch_pfi_at_
# paper_level and ``python tests/benchmarks/bench_papers.py --sections ipfi``.
# ARF (3 trees) on fn 2, 4 seeds: max per-feature deviation 0.027; Table 1 error median
# 0.082 / max 0.127 (its top features, elevel 0.39 and age 0.38, are a smaller spread to divide by).
FROZEN_MAX_DEVIATION = 0.05  # ~4 sd per feature
FROZEN_TABLE1_ERROR = {"hoeffding_tree": 0.15, "logistic_regression": 0.10, "arf": 0.16}  # ~1.25 x max


@pytest.mark.parametrize("kind", ["hoeffding_tree", "logistic_regression", "arf"])
@pytest.mark.slow
def test_ipfi_agrees_with_batch_pfi_on_frozen_river_model(kind):
    model, X, y = _frozen(kind)
    ref = batch_pfi(ModelFunction(model), "zero_one", X, y, n_repeats=3, seed=0)
    ipfi = IPFI(ModelFunction(model), "zero_one", NAMES, alpha=0.001, storage_size=1000, seed=0)
    for x, yi in zip(X, y, strict=True):
        ipfi.explain_one(x, yi)
    values = ipfi.values
    assert max(abs(values[f] - ref[f]) for f in NAMES) <= FROZEN_MAX_DEVIATION
    assert pfi_error(values, ref) <= FROZEN_TABLE1_ERROR[kind]
    top = sorted(ref, key=ref.__getitem__)[-2:]
    assert set(sorted(values, key=values.__getitem__)[-2:]) == set(top)


# --- protocol ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_tree():
    model = tree.HoeffdingTreeClassifier(leaf_prediction="mc", grace_period=50)
    for x, y in synth.Agrawal(classification_function=2, seed=3).take(4000):
        model.learn_one(x, y)
    assert model.summary["n_nodes"] > 1  # it splits, so some importances are non-zero
    events = list(synth.Agrawal(classification_function=2, seed=4).take(300))
    return model, events


@pytest.mark.parametrize("storage", ["geometric", "uniform"])
def test_feature_partition_gives_identical_values(small_tree, storage):
    model, events = small_tree

    def make(features):
        return IPFI(
            ModelFunction(model),
            "zero_one",
            NAMES,
            features=features,
            alpha=0.05,
            n_samples=2,
            storage=storage,
            storage_size=20,
            seed=9,
        )

    full = make(None)
    parts = {f: make([f]) for f in NAMES}
    pair = make(["age", "elevel"])
    for i, (x, y) in enumerate(events):
        explainers = [full, pair, *parts.values()]
        if i % 4 == 3:  # skipped under a budget
            for e in explainers:
                e.observe_one(x, y)
            continue
        out = full.explain_one(x, y)
        for f, e in parts.items():
            assert e.explain_one(x, y) == {f: out[f]}
        assert pair.explain_one(x, y) == {"age": out["age"], "elevel": out["elevel"]}
    assert any(v != 0.0 for v in full.values.values())


@pytest.mark.parametrize("features, m", [(None, 1), (None, 3), (["age", "salary"], 4)])
def test_evaluations_per_event(small_tree, features, m):
    model, events = small_tree
    f = ModelFunction(model)
    ipfi = IPFI(f, "zero_one", NAMES, features=features, n_samples=m, seed=1)
    d = len(features or NAMES)
    ipfi.explain_one(*events[0])
    assert f.n_evaluations == 0
    for x, y in events[1:50]:
        before = f.n_evaluations
        ipfi.explain_one(x, y)
        assert f.n_evaluations - before == 1 + d * m
        before = f.n_evaluations
        ipfi.observe_one(x, y)
        assert f.n_evaluations == before


def test_one_batched_call_per_event():
    calls = []

    def batch(rows):
        calls.append(len(rows))
        return [agrawal_f1(r) for r in rows]

    ipfi = IPFI(ModelFunction(agrawal_f1, batch=batch), "zero_one", NAMES, n_samples=3, seed=1)
    for x, y in synth.Agrawal(classification_function=1, seed=1).take(20):
        ipfi.explain_one(x, y)
    assert calls == [1 + 27] * 19  # h(x_t) and the 9 x 3 perturbed rows


def test_validation():
    f = ModelFunction(agrawal_f1)
    assert IPFI(agrawal_f1, "zero_one", NAMES).model_fn.model is agrawal_f1  # a bare callable is wrapped
    with pytest.raises(TypeError, match="predict_one"):
        IPFI(object(), "zero_one", NAMES)
    with pytest.raises(ValueError, match="storage"):
        IPFI(f, "zero_one", NAMES, storage="sliding")
    with pytest.raises(ValueError, match="n_samples"):
        IPFI(f, "zero_one", NAMES, n_samples=0)
    with pytest.raises(ValueError, match="alpha"):
        IPFI(f, "zero_one", NAMES, alpha=0.0)
    with pytest.raises(ValueError, match="not in feature_names"):
        IPFI(f, "zero_one", NAMES, features=["income"])
    ipfi = IPFI(f, "zero_one", ["age", "salary"])
    ipfi.observe_one({"age": 30}, 0)
    with pytest.raises(ValueError, match="lacks feature 'salary'"):
        ipfi.explain_one({"age": 30, "salary": 60000.0}, 1)


# --- sampling strategies ----------------------------------------------------------------


def _p_geometric(s: int, r: int, size: int) -> float:
    """Probability that observation r (0-based) is among the ``size`` kept after s updates."""
    return (1 - 1 / size) ** (s - 1 - max(r, size - 1)) if s > size else 1.0


def _binomial_ok(count: int, runs: int, q: float) -> bool:
    return abs(count - runs * q) <= 4 * math.sqrt(runs * q * (1 - q)) + 1e-9


@pytest.mark.parametrize("kind", ["uniform", "geometric"])
def test_reservoir_inclusion_probabilities(kind):
    size, n, runs = 10, 40, 2000
    cls = UniformReservoir if kind == "uniform" else GeometricReservoir
    counts = [0] * n
    for seed in range(runs):
        res = cls(size=size, seed=seed)
        for i in range(n):
            res.update({"id": i})
        for item in res.items:
            counts[item["id"]] += 1
    assert sum(counts) == runs * size
    for r in range(n):
        # uniform (Vitter): L / n for every observation; geometric: (1 - 1/L)^(n - 1 - r),
        # the first L observations (1 - 1/L)^(n - L). Each count is Binomial(runs, q):
        # 4 binomial standard deviations.
        q = size / n if kind == "uniform" else _p_geometric(n, r, size)
        assert _binomial_ok(counts[r], runs, q), (r, counts[r], runs * q)


@pytest.mark.parametrize("storage", ["uniform", "geometric"])
def test_ipfi_sampling_strategy_probabilities(storage):
    """p_{s,r} of Eq. 5 as drawn by iPFI at event s: uniform 1/s, geometric
    p (1 - p)^(s - r - 1) (r >= L) and p (1 - p)^(s - L) (r < L), never r = s (the sample
    is drawn before x_s enters the storage)."""
    size, s, runs = 10, 30, 2000
    counts = [0] * (s + 1)
    for seed in range(runs):
        drawn: list[int] = []

        def batch(rows, drawn=drawn):
            drawn.extend(r["id"] for r in rows[1:])  # rows[0] is x_s itself
            return [0] * len(rows)

        ipfi = IPFI(
            ModelFunction(lambda x: 0, batch=batch), "zero_one", ["id"], storage=storage, storage_size=size, seed=seed
        )
        for t in range(s + 1):
            ipfi.explain_one({"id": t}, 0)
            assert all(r < t for r in drawn[t - 1 :])
        counts[drawn[-1]] += 1
    assert counts[s] == 0
    for r in range(s):
        q = 1 / s if storage == "uniform" else _p_geometric(s, r, size) / size
        assert _binomial_ok(counts[r], runs, q), (r, counts[r], runs * q)


# --- drift ------------------------------------------------------------------------------


@pytest.mark.slow
def test_ranking_follows_function_drift_with_online_arf():
    """The paper's Experiment B (function drift, agrawal concept 1 -> 2) with a small ARF
    learning online, prequentially (explain with h_t, then learn)."""
    before, after = 2000, 2000
    stream = itertools.chain(
        synth.Agrawal(classification_function=1, seed=1).take(before),
        synth.Agrawal(classification_function=2, seed=1001).take(after),
    )
    arf = forest.ARFClassifier(n_models=3, seed=1, leaf_prediction="mc")
    ipfi = IPFI(ModelFunction(arf), "zero_one", NAMES, alpha=0.01, seed=1)
    interval = IntervalPFI(ModelFunction(arf), "zero_one", NAMES, interval=500, n_repeats=1, seed=1)
    for t, (x, y) in enumerate(stream, start=1):
        values = ipfi.explain_one(x, y)
        batch = interval.update(x, y)
        arf.learn_one(x, y)
        ranking = sorted(values, key=values.__getitem__, reverse=True)
        if t == before:
            # concept 1 uses salary and age (the ARF also leans on commission, which is
            # determined by salary, as the paper notes)
            assert {"salary", "age"} <= set(ranking[:3])
            assert values["elevel"] < values["salary"]
        if t >= before + 1000 and t % 250 == 0:
            # concept 2 uses age and education level. Measured over 6 seeds: from 500
            # events after the switch on, the top two were {age, elevel} at every
            # checkpoint; 1000 leaves a margin.
            assert set(ranking[:2]) == {"age", "elevel"}, (t, ranking)
            assert values["salary"] < values["elevel"]
            if batch is not None:  # interval PFI (the paper's baseline) agrees
                assert set(sorted(batch, key=batch.__getitem__)[-2:]) == {"age", "elevel"}
    assert interval.n_intervals == (before + after) // 500
