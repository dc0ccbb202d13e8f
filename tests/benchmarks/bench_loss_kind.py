"""The kind test at a stationary loss, run on demand: ``python tests/benchmarks/bench_loss_kind.py
[--cache DIR] [--frozen-n 4000000] [--seeds 101-120] [--skip-alert] [--members 20] [--only-members]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable, Iterator

sys.path.insert(0, os.path.abspath(os.path.dirname(__file__)))
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

import bench_change as bd  # noqa: E402
import numpy as np  # noqa: E402
from streamxai.core.change.events import loss_kind  # noqa: E402
from streamxai.core.change.looks import close_kind, open_kind  # noqa: E402
from streamxai.core.change.test import Z90, two_sample_z  # noqa: E402
from streamxai.core.increments import Block  # noqa: E402
from streamxai.core.losses import get_loss  # noqa: E402
from streamxai.core.model import ModelFunction  # noqa: E402
from streamxai.modelspec import model_factory  # noqa: E402

NEVER = (10**9, 10**9 + 1, 10**9 + 2)  # drift positions beyond the stream: stationary Friedman
#: a subtree replaced or pruned: the tree's node count falls by more than this between two looks
DROP = 4
LOOK = 10  # events between two looks at the tree's size


def run_model(model: object, events: Iterator[bd.Event], n: int, learn: bool = True) -> tuple[np.ndarray, list[int]]:
    """Prequential squared losses of ``model`` on ``n`` events, and its node count every
    ``LOOK`` events (learning models only)."""
    s = bd.regression_settings()
    fn, loss_fn = ModelFunction(model, output=s.output), get_loss(s.loss)
    losses, nodes = np.empty(n), []
    for i, (x, y) in zip(range(n), events, strict=False):
        losses[i] = float(loss_fn(y, fn(x)))
        if learn:
            model.learn_one(x, y)
            if i % LOOK == LOOK - 1:
                nodes.append(model.n_nodes)
    return losses, nodes


def side(x: np.ndarray) -> Block:
    mean = float(x.mean())
    return Block(len(x), mean, float(np.square(x - mean).sum()))


def drops(nodes: list[int]) -> list[int]:
    """Events at which the tree shrank by more than ``DROP`` nodes."""
    return [LOOK * (i + 1) for i in range(1, len(nodes)) if nodes[i] < nodes[i - 1] - DROP]


# --- 1. the learning regression tree's alert ---------------------------------------------------
def the_alert(cache: str) -> None:
    sc = next(s for s in bd.scenarios(1.0) if s.name == "learning-regression")
    rec = bd.recorded(sc, cache) if cache else bd.record(sc)
    res = bd.detect(sc, rec)
    s = sc.settings
    losses, nodes = run_model(model_factory(s.model, s.model_params, s.model_seed)(), sc.events(), sc.n)
    recorded = {seq: ml for _, _, seq, _, _, ml, _, _ in rec.feed if ml is not None}
    same = all(math.isclose(side(losses[q - LOOK + 1:q + 1]).mean, b.mean, rel_tol=1e-9) for q, b in recorded.items())
    print(f"learning-regression: the model run again reproduces the {len(recorded)} recorded loss blocks: {same}")
    shrink = drops(nodes)
    print(f"  the tree shrank (a subtree replaced or pruned, > {DROP} nodes) at events {shrink}")
    print("  loss per 2,500 events (mean; the tree's nodes at the end):")
    print("   ", ", ".join(f"{lo / 1000:g}k {losses[lo:lo + 2500].mean():.3g} ({nodes[(lo + 2500) // LOOK - 1]})"
                         for lo in range(0, sc.n, 2500)))
    for q, e in res.opened:
        if not e.alert:
            continue
        cut, b = e.cut_seq, e.loss_before
        print(f"  alert at {q}: {e.kind}, cut {cut}; opened on the loss {b.mean:.4g} over {b.n} events before, "
              f"{e.loss_after.mean:.4g} over {e.loss_after.n} after (z {two_sample_z(b, e.loss_after):.2f})")
        before = side(losses[cut - b.n:cut])
        for k in (210, 500, 1000, 2000, 5000):
            after = side(losses[cut:cut + k])
            print(f"    the {k} events from the cut: loss {after.mean:.4g} ({after.mean / before.mean - 1:+.0%}), "
                  f"z {two_sample_z(before, after):.2f}: {loss_kind(before, after, min_n=s.change_min_samples)}")
        near = range(max(0, cut - 2000), min(sc.n, cut + 3000), 500)
        print("    the tree's nodes:", ", ".join(f"{p}: {nodes[p // LOOK - 1]}" for p in near))


# --- 2. false rates at random cuts -------------------------------------------------------------
def pooled(before: Block, after: Block, min_n: int) -> str:
    return _kind(two_sample_z(before, after, pooled_only=True))


def welch(before: Block, after: Block, min_n: int) -> str:
    return _kind((after.mean - before.mean) / math.sqrt(before.var / before.n + after.var / after.n))


def _kind(z: float) -> str:
    return "learning" if z <= -Z90 else "degradation" if z >= Z90 else "reliance_shift"


RULES: dict[str, Callable[[Block, Block, int], str]] = {"the rule (larger of pooled and Welch)": loss_kind,
                                                        "pooled alone": pooled, "Welch alone": welch}


def cuts(losses: np.ndarray, seed: int, start: int, after: tuple[int, int] = (100, 500),
         back: tuple[int, int] = (5_000, 27_000)) -> Iterator[tuple[int, Block, Block]]:
    """Random cuts with disjoint after-sides: (cut, before, after)."""
    rng = np.random.default_rng(seed)
    i = start + back[0]
    while True:
        k, b = int(rng.integers(after[0], after[1] + 1)), int(rng.integers(back[0], back[1] + 1))
        if i + k > len(losses):
            return
        yield i, side(losses[max(start, i - b):i]), side(losses[i:i + k])
        i += k


def two_looks(losses: np.ndarray, seed: int, start: int) -> tuple[int, int, int, int]:
    """An episode's two looks at one cut of a loss that did not move: at its open (after-side of
    100-500 losses) and, if that said nothing, at its close (1,000-2,000 from the same cut);
    cuts with disjoint spans. (cuts, told ``degradation`` by either look with each at 5%, the
    same under the rule (:mod:`streamxai.core.change.looks`: 3.75% of one 5% shared with the members),
    told ``learning`` by either look's cut test under the rule)."""
    rng = np.random.default_rng(seed)
    i, n, each, shared, learned = start + 5_000, 0, 0, 0, 0
    while True:
        k, k2, b = int(rng.integers(100, 501)), int(rng.integers(1_000, 2_001)), int(rng.integers(5_000, 27_001))
        if i + k2 > len(losses):
            return n, each, shared, learned
        before, first, last = side(losses[max(start, i - b):i]), side(losses[i:i + k]), side(losses[i:i + k2])
        kind = loss_kind(before, first, 100)
        kind = kind if kind != "reliance_shift" else loss_kind(before, last, 100)
        rule = open_kind(before, first, 100)
        rule = rule if rule != "reliance_shift" else close_kind(before, last, (i + k, before.n, k), i + k2, 100)
        n, each, shared, learned = n + 1, each + (kind == "degradation"), shared + (rule == "degradation"), \
            learned + (rule == "learning")
        i += k2


def pct(k: int, n: int) -> str:
    """``k`` of ``n`` in percent, with its binomial standard error."""
    p = k / n
    return f"{100 * p:.2f}% (se {100 * math.sqrt(p * (1 - p) / n):.2f})"


def rates(name: str, sides: list[tuple[Block, Block]]) -> None:
    n = len(sides)
    for rule, decide in RULES.items():
        kinds = [decide(b, a, 100) for b, a in sides]
        shown = []
        for kind in ("degradation", "learning"):
            p = kinds.count(kind) / n if n else float("nan")
            shown.append(f"{kind} {100 * p:.2f}% (se {100 * math.sqrt(p * (1 - p) / n) if n else float('nan'):.2f})")
        print(f"  {name:<44} {n:6d} cuts, {rule:<38} " + ", ".join(shown))


def false_rates(frozen_n: int, seeds: list[int]) -> None:
    t0 = time.perf_counter()
    frozen = bd.Frozen(bd.trained_regressor(bd.friedman_local(62, NEVER), 5000))
    losses, _ = run_model(frozen, bd.friedman_local(12, NEVER), frozen_n, learn=False)
    x = losses[:200_000] - losses[:200_000].mean()
    print(f"\nfrozen regression tree, {frozen_n} events: excess kurtosis of the squared loss "
          f"{np.mean(x ** 4) / np.mean(x ** 2) ** 2 - 3:.0f}, skewness {np.mean(x ** 3) / np.mean(x ** 2) ** 1.5:.1f}")
    for lo, hi in ((100, 500), (100, 200), (200, 300), (400, 500), (1000, 2000)):
        rates(f"after-sides {lo}-{hi}", [(b, a) for _, b, a in cuts(losses, 1, 0, (lo, hi))])
    light = np.random.default_rng(3).random(frozen_n) < 0.2, np.random.default_rng(4).standard_normal(frozen_n)
    for name, x in (("this loss", losses), ("0-1 losses (Bernoulli 0.2)", light[0].astype(float)),
                    ("normal losses", light[1])):
        n, each, shared, learned = two_looks(x, 2, 0)
        print(f"  an episode's two looks (open 100-500, then close 1,000-2,000), {name}: {n} cuts, degradation "
              f"with each look at 5% {pct(each, n)}, under the rule (open and close 3.75% of the 5%) {pct(shared, n)}; "
              f"learning by the looks' cut tests {pct(learned, n)}")
    away, near, n_drops, worse = [], [], 0, []
    s = bd.regression_settings()
    for seed in seeds:
        m = model_factory(s.model, s.model_params, s.model_seed)()
        losses, nodes = run_model(m, bd.friedman_local(seed, NEVER), 50_000)
        shrink = [d for d in drops(nodes) if d >= 5000]
        n_drops += len(shrink)
        worse += [losses[d:d + 2000].mean() / losses[d - 2000:d].mean() - 1 for d in shrink if d + 2000 <= len(losses)]
        for i, b, a in cuts(losses, seed, 5000):
            (near if any(i - 2000 <= d <= i + a.n for d in shrink) else away).append((b, a))
    print(f"\nlearning regression trees (river seeds {seeds[0]}-{seeds[-1]}, 50,000 events each, from event 5,000): "
          f"{n_drops} subtree replacements ({n_drops / len(seeds):.1f} per stream); the loss over the 2,000 events "
          f"after one against the 2,000 before: median {np.median(worse):+.0%}, higher after {np.mean(np.array(worse) > 0):.0%} "
          f"of them")
    rates("away from a subtree replacement", away)
    rates("a subtree replaced <= 2,000 before or after", near)
    print(f"({time.perf_counter() - t0:.0f}s)")


# --- 3. episodes with members at a flat loss ----------------------------------------------------
def members_at_a_flat_loss(streams: int, n: int = 30_000, gaps: tuple[int, int] = (300, 701)) -> None:
    """How often an episode is told ``degradation`` at a loss that did not move, with its
    members' own looks (the rule) and without (every change joining the open episode, the rule
    before): streams whose four iPFI series step by 0.3 at a random feature every ``gaps`` events
    (300-700: changes chain into long episodes with many members) while the loss stays 0-1 at 20%,
    or normal."""
    from streamxai.core.change.stream import StreamChangeDetector

    series = [("ipfi", f) for f in "abcd"]
    for loss_name in ("0-1 losses (Bernoulli 0.2)", "normal losses"):
        counts = {}
        for rule in ("the rule (members' own looks)", "join (no member's look)"):
            told, episodes, members = 0, 0, 0
            for k in range(streams):
                rng = np.random.default_rng(1000 + k)  # the same streams under both rules
                det = StreamChangeDetector(series, warmup=0)
                if rule.startswith("join"):
                    det._member_looks = lambda seq: []
                levels, nxt = {f: 0.5 for _, f in series}, int(rng.integers(*gaps))
                eps = []
                for t in range(n // 10):
                    seq = 10 * t + 9
                    if seq >= nxt:
                        f = "abcd"[int(rng.integers(4))]
                        levels[f] = 0.2 if levels[f] > 0.35 else 0.5
                        nxt = seq + int(rng.integers(*gaps))
                    x = rng.random(10) < 0.2 if loss_name.startswith("0-1") else rng.standard_normal(10)
                    loss = side(x.astype(float))
                    for e, f in series:
                        _, ep = det.update(e, f, seq, side(levels[f] + 0.2 * rng.standard_normal(10)), model_loss=loss)
                        eps += [q for q in ep if q.first]
                eps += [q for q in det.flush() if q.first]
                episodes += len(eps)
                told += sum(q.kind == "degradation" for q in eps)
                members += sum(len(q.changes) - 1 for q in eps)
            counts[rule] = (told, episodes, members)
        print(f"\nepisodes at a flat loss with members, {loss_name} ({streams} streams of {n} events, a step every "
              f"{gaps[0]}-{gaps[1] - 1} events): " + "; ".join(
            f"{rule}: {pct(t, e)} of {e} episodes told degradation ({m / max(1, e):.1f} members each)"
            for rule, (t, e, m) in counts.items()))


def main() -> None:
    """1. ``bench_drift.py``'s ``learning-regression`` alert, looked at closely (``--cache``: the
       explanation messages ``bench_drift.py --cache DIR`` kept; without it they are recorded again,
       about two minutes): the model is run again on the same stream (its losses must equal the
       recorded ones), and for every alerting episode it prints the loss after the cut over longer
       after-sides than the episode opened on, against the same side before, and the tree's size
       around the cut: a Hoeffding adaptive tree that replaces a subtree by its alternate (or prunes
       it) shrinks, and a young subtree predicts worse for a while.
    2. How often ``loss_kind`` tells a loss that did not move as ``degradation`` or ``learning``: at
       random cuts of a stationary Friedman stream (after-sides of 100-500 losses, the length an
       episode opens on, disjoint; before-sides of 5,000-27,000), on a frozen regression tree
       (``bench_drift.py``'s ``frozen-regression`` model, ``--frozen-n`` events) and on learning
       trees (``--seeds``, 50,000 events each, cuts after 5,000; split by whether a subtree was
       replaced within 2,000 events before the cut or in its after-side). Each direction is a
       one-sided test at 5%; the binomial standard error of each rate is printed. For comparison the
       same cuts under the pooled standard error alone and Welch's alone (the rule uses the larger),
       and an episode's two looks at its loss (open, then close) on this loss and on light tails,
       each look at 5% beside the rule (the two looks 3.75% of the 5% shared with the members).
    3. Episodes whose changes chain (members) at a loss that did not move: how often they are told
       ``degradation`` with the members' own looks (:func:`streamxai.core.change.looks.member_rise`)
       and without them (``--members`` streams of 30,000 events; synthetic, a few seconds each).
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default="", help="bench_change.py's --cache directory (its learning-regression pass)")
    ap.add_argument("--frozen-n", type=int, default=4_000_000, help="events of the frozen regression tree")
    ap.add_argument("--seeds", default="101-120", help="river seeds of the learning trees' streams, FIRST-LAST")
    ap.add_argument("--skip-alert", action="store_true", help="only the false rates (part 2)")
    ap.add_argument("--members", type=int, default=20, metavar="STREAMS",
                    help="part 3: streams of episodes with members at a flat loss (0: skip); --only-members: only it")
    ap.add_argument("--only-members", action="store_true")
    args = ap.parse_args()
    lo, hi = (int(v) for v in args.seeds.split("-"))
    if args.members:
        for gaps in ((300, 701), (700, 1501)):
            members_at_a_flat_loss(args.members, gaps=gaps)
    if args.only_members:
        return
    if not args.skip_alert:
        the_alert(args.cache)
    false_rates(args.frozen_n, list(range(lo, hi + 1)))


if __name__ == "__main__":
    main()
