"""Values that no longer go with their labels: a feature the labels moved with, shuffled between
events or joined on a wrong key, keeps its values and loses that link.

:func:`label_unlinked` reads, for each feature whose values do not follow each other smoothly,
the rank correlation of its values with the labels (each class's indicator, or the target's
ranks) over the reference and over each of its stretches where both spread, and finds the link
lost when every link the feature had is gone from the newest values, while the model predicts
those events worse, no other feature's link weakened and the labels' concept did not move to
another feature (:func:`_grew`, :func:`_others_moved`). :func:`labels_flipped` finds the
labels' own fault, where every link the labels had weakened at once while the model predicts them
worse. The rules are specified in docs/pages/concepts/change-events.md (Data faults, ``reordered``).

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> x = rng.normal(size=1100)
>>> y = (x + rng.normal(scale=0.7, size=1100) > 0.5).astype(float)
>>> losses = np.where((x > 0.5) == (y > 0), 0.1, 0.9)
>>> label_unlinked(x[None, :], y, losses, [0], 100)            # linked as before: nothing
[]
>>> x[950:] = rng.permutation(x[950:])                            # shuffled from 950 on
>>> losses[950:] = np.where((x[950:] > 0.5) == (y[950:] > 0), 0.1, 0.9)
>>> [(j, at, round(then, 2), round(now, 2)) for j, at, then, _, now in label_unlinked(x[None, :], y, losses, [0], 100)]
[(0, 950, 0.64, 0.05)]
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from ..increments import Block
from .test import Z90, two_sample_z

__all__ = ["LABEL", "label_unlinked", "labels_flipped", "foreseen", "predicted_worse", "midranks", "change_point"]

#: the labels' links with the features a reference holds: (row, class) -> (the whole reference's
#: rank correlation, its least stretch's signed alike)
Links = dict[tuple[int, float], tuple[float, float]]
#: labels found flipped: (where the flips began, [(row, the reference's link, the least stretch's, the newest's)])
Flipped = tuple[int, list[tuple[int, float, float, float]]]

#: the name the labels' faults go by, where a fault of a feature names the feature
LABEL = "label"
#: a link with the labels: the rank correlation in every stretch of the reference at least this
_LINKED = 0.2
#: a link lost: the newest values' correlation at most this, this far below the least stretch's,
#: and this many standard errors below the reference's (Fisher's z)
_LOST = 0.1
#: ... at most this where the classes' shares moved too (:func:`_labels_moved`): flips of 30%
#: leave about 0.35 of a link (0.15 to 0.2 of flights' delays), a shuffle none, read within 0.07
_GONE = 0.05
_MARGIN = 0.25
_Z = 5.0
#: the fewest stretches of the reference, with spread in both the values and the labels, a link is read over
_FEWEST = 2
#: the concept guards read the labels' means in each of this many equal parts of a feature's
#: reference ranks (eighths: about 110 events each in a reference of 900)
_PARTS = 8
#: a concept that moved: a feature's link in the newest values this much above its strongest in a
#: stretch of the reference, read through its parts (:func:`_grew`)
_GREW = 0.15
#: a concept that moved: the newest labels' means in another feature's parts this far from the
#: reference's, as a normal quantile of the chi-square test (:func:`_others_moved`; about 3e-7)
_MOVED_Z = 5.0
#: the least rank von Neumann ratio (of values 1 to 8 apart) of a feature whose link is read
_SERIAL = 1.0
#: labels of at most this many values are classes, each one's indicator read; more: a target
_CLASSES = 20
#: the least share of a class, in the reference, whose indicator is read
_CLASS_SHARE = 0.05
#: the newest labels moved: a class's share this many standard errors from the reference's
_LABELS_MOVED = 4.0
#: labels flipped: the features they went with (a rank correlation of at least ``_STRONG`` with a
#: class in every stretch of the reference) go with the newest labels at most ``_WEAKENED`` times
#: as much as in their least stretches, summed, and their links fell ``_FLIPPED_Z`` standard errors
#: below the whole reference's together (Fisher's z, summed over the features as Stouffer's); flips
#: of a share s of two classes scale every link by about (1 - 2s) and by the labels' spread before
#: over their spread now (0.35 to 0.4 at s = 0.3), and 200 labels read a link within about 0.07
_STRONG = 0.25
_WEAKENED = 0.6
_FLIPPED_Z = 4.0
#: ... each link within this many standard errors of the reference's scaled by their common factor
_ALIKE = 3.0
#: the fewest events with a known loss on each side for the model's losses to tell which side
#: it predicted better (:func:`foreseen`)
_FORESEEN = 10


def label_unlinked(values: np.ndarray, labels: np.ndarray, losses: np.ndarray, candidates: list[int],
                   recent: int, serial: np.ndarray | None = None) -> list[tuple[int, int, float, float, float]]:
    """The features among ``candidates`` (rows of ``values`` beside the labels and losses; NaN:
    none) whose values no longer go with the labels: ``(row, where the link was lost, the
    reference's correlation, the least stretch's, the newest values')``, signed positive.
    ``serial``: each row's rank von Neumann ratio (below ``_SERIAL``: not read)."""
    k = 2 * recent
    n = values.shape[1]
    if n < 3 * k or np.isnan(labels).any():
        return []
    ref_y, rec_y = labels[:-k], labels[-k:]
    targets = _targets(ref_y, rec_y)
    if not targets or foreseen(losses[-k:], losses[:-k]):
        return []
    # flipped labels move the classes' shares and weaken every link without cutting it: there a
    # link is lost only once it is all but gone
    lost = _GONE if _labels_moved(targets) else _LOST
    se = np.sqrt(1.0 / (k - 3) + 1.0 / (n - k - 3))  # of Fisher's z, the newest values against the reference
    read = set(candidates)
    found, weakened = [], 0
    parts: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # each row's parts, reference and newest
    starts = range((n - k) % k, n - k, k)  # the reference's stretches
    for j in range(values.shape[0]):
        row = values[j]
        ref, rec = row[:-k], row[-k:]
        if np.isnan(row).any() or ref.min() == ref.max():
            continue  # no spread: the tests of stuck values speak
        s = np.sort(ref)
        u_ref, u_rec = midranks(s, ref), midranks(s, rec)
        bins = parts[j] = (_part(u_ref), _part(u_rec))
        if rec.min() == rec.max():
            continue
        # the newest values of a feature whose values follow each other are a few independent ones
        # (a day or two of a date), whose link with the labels swings with the stream's own
        # stretches (a stormy day): its link that grew tells of no concept, nor does its link lost
        smooth = serial is not None and not serial[j] >= _SERIAL
        links = []
        for t_ref, t_rec in targets:
            if not smooth and _grew(*bins, t_ref, t_rec, starts, k):
                return []  # a feature the labels go with as never before: the labels' concept changed
            whole, stretches, now = _link(u_ref, u_rec, t_ref, t_rec, starts, k)
            if len(stretches) < _FEWEST:
                continue
            sign = 1.0 if whole >= 0 else -1.0
            stretches, now = [sign * c for c in stretches], sign * now
            if not smooth and abs(now) >= max(abs(whole) + _MARGIN, max(map(abs, stretches)) + _MARGIN / 2):
                return []  # a feature the labels go with as never before: the labels' concept changed
            if min(stretches) >= _LINKED:
                links.append((abs(whole), min(stretches), now, sign * (u_ref - 0.5), sign * (u_rec - 0.5), t_ref, t_rec))
        if not links or j not in read or smooth:
            continue
        weakened += any(now <= least - _MARGIN / 2 for _, least, now, *_ in links)
        if all(now <= min(lost, least - _MARGIN)
               and _fall(whole, now) >= _Z * se
               for whole, least, now, *_ in links):
            whole, least, now, f_ref, f_rec, t_ref, t_rec = max(links, key=lambda link: link[1])
            # where the link was lost: the change point of the products of centred ranks and labels
            span_t = np.concatenate([t_ref[-k:], t_rec])
            prod = np.concatenate([f_ref[-k:], f_rec]) * (span_t - span_t.mean())
            found.append((j, n - 2 * k + change_point(prod), whole, least, now))
    if len(found) != 1 or weakened != 1:
        return []
    if _others_moved(parts, found[0][0], targets):
        return []
    return found


def labels_flipped(values: np.ndarray, labels: np.ndarray, losses: np.ndarray, recent: int,
                   skip: Collection[int] = (), remembered: Sequence[Links] = (),
                   serial: np.ndarray | None = None, kept: Collection[int] = ()) -> tuple[Flipped | None, Links]:
    """Whether the newest ``2 * recent`` labels (classes) go with every feature they went with
    much less than before (:data:`_STRONG`, :data:`_WEAKENED`, :data:`_ALIKE`, :data:`_FLIPPED_Z`)
    while the model predicts them worse, as labels flipped for a share of the events leave them:
    ``(where the flips began, [(row, the reference's correlation, the least stretch's, the
    newest's)])``, signed positive, or None; with the links of this reference, which a later test
    reads among ``remembered`` (the flips' first events enter the reference and loosen its links).
    Rows in ``skip`` (features under a finding) are not read, nor rows whose values follow each
    other (``serial``: their rank von Neumann ratio, below ``_SERIAL``), whose few independent values
    in a stretch let their link with the labels swing and turn. A link that grew beyond any the
    reference had is a concept that moved, not a flip. Where the labels went with one feature only,
    the classes' shares must have moved too (:func:`_labels_moved`), or that feature's values follow
    each other a little and kept that order in the newest values (``kept``: rows whose order a
    shuffle among nearby events would break), the link kept some strength (``_LOST``) and weakened
    in the older half of the newest values too: that feature's values shuffled off their labels
    hold the shares and cut the link, from where the shuffle began."""
    k = 2 * recent
    n = values.shape[1]
    if n < 3 * k or np.isnan(labels).any() or len(np.unique(labels)) > _CLASSES:
        return None, {}
    se = np.sqrt(1.0 / (k - 3) + 1.0 / (n - k - 3))
    starts = range((n - k) % k, n - k, k)
    targets = _class_targets(labels[:-k], labels[-k:])
    links: Links = {}
    newest: dict[tuple[int, float], tuple] = {}
    for j in range(values.shape[0]):
        row = values[j]
        ref, rec = row[:-k], row[-k:]
        if (j in skip or (serial is not None and not serial[j] >= _SERIAL) or np.isnan(row).any()
                or ref.min() == ref.max() or rec.min() == rec.max()):
            continue
        s = np.sort(ref)
        u_ref, u_rec = midranks(s, ref), midranks(s, rec)
        for c, t_ref, t_rec in targets:
            if _grew(_part(u_ref), _part(u_rec), t_ref, t_rec, starts, k):
                return None, {}
            whole, stretches, now = _link(u_ref, u_rec, t_ref, t_rec, starts, k)
            if len(stretches) < _FEWEST:
                continue
            sign = 1.0 if whole >= 0 else -1.0
            links[(j, c)] = (whole, min(sign * x for x in stretches))
            newest[(j, c)] = (now, sign * (u_rec - 0.5), t_rec)
    if not predicted_worse(losses[-k:], losses[:-k]):
        return None, links
    strongest: dict[int, tuple] = {}  # each feature's strongest link (two classes: both alike)
    for key, (now, f_rec, t_rec) in newest.items():
        # the reference's link: of this test or of a remembered one, the one whose least stretch held most
        whole, least = max([links[key], *(m[key] for m in remembered if key in m and m[key][0] * links[key][0] > 0)],
                           key=lambda link: link[1])
        sign = 1.0 if whole >= 0 else -1.0
        link = (key[0], abs(whole), least, sign * now, f_rec, t_rec)
        if least >= _STRONG and (key[0] not in strongest or least > strongest[key[0]][2]):
            strongest[key[0]] = link
    if not strongest or sum(now for _, _, _, now, *_ in strongest.values()) > _WEAKENED * sum(
            least for _, _, least, *_ in strongest.values()):
        return None, links
    # flips scale every link alike: each one within three standard errors (200 values: 0.07 each)
    # of the reference's scaled by the links' common factor; one that held or turned is the world's
    factor = sum(now for _, _, _, now, *_ in strongest.values()) / sum(whole for _, whole, *_ in strongest.values())
    if any(abs(now - factor * whole) > _ALIKE / np.sqrt(k) for _, whole, _, now, *_ in strongest.values()):
        return None, links
    # each link's fall, in Fisher's z; the features' falls together (Stouffer's sum)
    falls = [_fall(whole, now) for _, whole, _, now, *_ in strongest.values()]
    if sum(falls) < _FLIPPED_Z * se * np.sqrt(len(falls)):
        return None, links
    if len(strongest) == 1:
        # one feature's link: flips move the classes' shares (or, where they were near even
        # already, leave the order of a feature that follows itself, which a shuffle breaks), leave
        # part of the link and weaken it in the older half of the newest values as in the newer,
        # where that feature's values shuffled off their labels hold the shares and leave nothing
        # of it, or, filling the newest values only in part, leave the older half's
        (row, _, least, now, f_rec, t_rec), = strongest.values()
        if (now < _LOST or not (row in kept or _labels_moved([(t_ref, t_rec) for _, t_ref, t_rec in targets]))
                or _corr(f_rec[:recent], t_rec[:recent]) > _WEAKENED * least):
            return None, links
    # where the flips began: the change point of the model's losses over the last 2k events (all known)
    span_loss = losses[-2 * k:]
    at = n - 2 * k + change_point(span_loss) if not np.isnan(span_loss).any() else n - k
    return (at, [link[:4] for link in strongest.values()]), links


def _fall(whole: float, now: float) -> float:
    """How far a link fell from ``whole`` to ``now``, in Fisher's z (clipped short of +-1)."""
    return float(np.arctanh(min(whole, 0.999)) - np.arctanh(max(now, -0.999)))


def _link(f_ref: np.ndarray, f_rec: np.ndarray, t_ref: np.ndarray, t_rec: np.ndarray, starts: range,
          k: int) -> tuple[float, list[float], float]:
    """A feature's rank correlation with the labels over the reference, in each stretch where both
    spread, and over the newest values."""
    stretches = [_corr(f_ref[a:a + k], t_ref[a:a + k]) for a in starts
                 if f_ref[a:a + k].min() < f_ref[a:a + k].max() and t_ref[a:a + k].min() < t_ref[a:a + k].max()]
    return _corr(f_ref, t_ref), stretches, _corr(f_rec, t_rec)


def _others_moved(parts: dict[int, tuple[np.ndarray, np.ndarray]], j: int,
                  targets: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    """Whether the newest labels' means in some other feature's parts differ from the
    reference's, beyond one shift of them all, by more than the chi-square quantile of
    ``_MOVED_Z`` (Wilson-Hilferty): a concept that moved changes how the labels go with that
    feature's parts, a shuffle of row ``j`` does not, and a stream's own swing of its classes'
    shares (late flights on a stormy evening) moves every part alike."""
    for g, (p_ref, p_rec) in parts.items():
        if g == j:
            continue
        n_ref, n_rec = np.bincount(p_ref, minlength=_PARTS), np.bincount(p_rec, minlength=_PARTS)
        use = (n_ref >= 5) & (n_rec >= 5)
        d = int(use.sum()) - 1  # the degrees of freedom left by the common shift
        if d < 1:
            continue
        q = d * (1.0 - 2.0 / (9 * d) + _MOVED_Z * np.sqrt(2.0 / (9 * d))) ** 3
        for t_ref, t_rec in targets:
            m_ref, m_rec = _part_means(p_ref, t_ref)[use], _part_means(p_rec, t_rec)[use]
            var = float(t_ref.var()) * (1.0 / n_rec[use] + 1.0 / n_ref[use])
            if var.min() > 0:
                gap = m_rec - m_ref
                gap = gap - float((gap / var).sum() / (1.0 / var).sum())
                if float((gap ** 2 / var).sum()) > q:
                    return True
    return False


def _part_means(p: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The mean of ``t`` in each of the ``_PARTS`` parts ``p`` names (0 in a part without any)."""
    return np.bincount(p, weights=t, minlength=_PARTS) / np.maximum(np.bincount(p, minlength=_PARTS), 1)


def _grew(p_ref: np.ndarray, p_rec: np.ndarray, t_ref: np.ndarray, t_rec: np.ndarray, starts: range, k: int) -> bool:
    """Whether the newest labels go with the feature's parts ``_GREW`` more than in any stretch of
    the reference but the last: a concept that moved to a feature makes its link grow."""
    def eta(p: np.ndarray, t: np.ndarray) -> float:
        return _corr(_part_means(p, t)[p], t)

    if t_rec.min() == t_rec.max():
        return False
    spans = [eta(p_ref[a:a + k], t_ref[a:a + k]) for a in starts[:-1] if t_ref[a:a + k].min() < t_ref[a:a + k].max()]
    return bool(spans) and eta(p_rec, t_rec) >= max(spans) + _GREW


def _part(u: np.ndarray) -> np.ndarray:
    """Which of the reference's ``_PARTS`` equal parts each value's midrank falls in (equal
    values share a part)."""
    return np.minimum((u * _PARTS).astype(np.int64), _PARTS - 1)


def _targets(ref_y: np.ndarray, rec_y: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The labels as numbers: each class's indicator (classes of at least ``_CLASS_SHARE``, present
    and absent among the newest), or a target's ranks."""
    classes, counts = np.unique(ref_y, return_counts=True)
    if len(classes) > _CLASSES:
        s = np.sort(ref_y)
        return [(midranks(s, ref_y), midranks(s, rec_y))] if rec_y.min() < rec_y.max() else []
    return [(t_ref, t_rec) for _, t_ref, t_rec in _class_targets(ref_y, rec_y)]


def _class_targets(ref_y: np.ndarray, rec_y: np.ndarray) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """Each class of at least ``_CLASS_SHARE`` of the reference, present and absent among the
    newest: ``(the class, its indicator over the reference, over the newest)``."""
    classes, counts = np.unique(ref_y, return_counts=True)
    out = []
    for c, count in zip(classes, counts, strict=True):
        if _CLASS_SHARE <= count / len(ref_y) <= 1.0 - _CLASS_SHARE:
            t_rec = (rec_y == c).astype(float)
            if 0.0 < t_rec.mean() < 1.0:
                out.append((float(c), (ref_y == c).astype(float), t_rec))
    return out


def _labels_moved(targets: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    """Whether a class's share, or a target's mean rank, moved ``_LABELS_MOVED`` standard errors
    from the reference's: flipped labels move it, values shuffled off their labels do not."""
    for t_ref, t_rec in targets:
        p, k = float(t_ref.mean()), len(t_rec)
        var = p * (1.0 - p) if set(np.unique(t_ref)) <= {0.0, 1.0} else float(t_ref.var())
        if abs(float(t_rec.mean()) - p) >= _LABELS_MOVED * np.sqrt(var / k):
            return True
    return False


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    a = a - a.mean()
    b = b - b.mean()
    d = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum()) / d if d > 0.0 else 0.0


def foreseen(odd: np.ndarray, usual: np.ndarray) -> bool:
    """Whether the model predicted the events with odd values at least as well as the usual ones
    (losses, NaN where none came), with ``_FORESEEN`` known on each side: a broken pipeline's values
    no longer tell of their labels, the world's own odd stretch still does."""
    a, b = odd[~np.isnan(odd)], usual[~np.isnan(usual)]
    return len(a) >= _FORESEEN and len(b) >= _FORESEEN and float(a.mean()) <= float(b.mean())


def predicted_worse(odd: np.ndarray, usual: np.ndarray) -> bool:
    """Whether the model's mean loss on the events of ``odd`` lies above its mean on those of
    ``usual`` by :data:`~.test.Z90` standard errors (:func:`~.test.two_sample_z`; one-sided 5%: it
    confirms a pattern of the values that random placement makes and the world seldom does), with
    ``_FORESEEN`` losses known on each side (NaN where none came)."""
    a, b = odd[~np.isnan(odd)], usual[~np.isnan(usual)]
    if len(a) < _FORESEEN or len(b) < _FORESEEN:
        return False
    return two_sample_z(_block(b), _block(a)) >= Z90


def _block(values: np.ndarray) -> Block:
    mean = float(values.mean())
    return Block(len(values), mean, float(((values - mean) ** 2).sum()))


def midranks(sorted_ref: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Where ``values`` fall in a sorted reference, as a share in [0, 1] (ties: the middle of
    the reference's equal values), so that discrete values rank alike whatever their order."""
    lo = np.searchsorted(sorted_ref, values, side="left")
    hi = np.searchsorted(sorted_ref, values, side="right")
    return (lo + hi) / (2.0 * len(sorted_ref))


def change_point(series: np.ndarray) -> int:
    """The split of ``series`` that best tells the mean before it from the mean after it (the
    largest standardised difference of the two, a single change point's estimate)."""
    n = len(series)
    i = np.arange(1, n)
    before = np.cumsum(series)[:-1] / i
    after = np.cumsum(series[::-1])[::-1][1:] / (n - i)
    return int(i[np.argmax(np.abs(before - after) * np.sqrt(i * (n - i) / n))])
