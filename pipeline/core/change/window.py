"""The recent increments of one series, in an exponential histogram of blocks.

>>> from streamxai.core.increments import Block
>>> w = SeriesWindow(max_increments=100, buckets_per_level=2)
>>> for t in range(6):
...     w.add(10 * t, 10 * t + 9, Block(10, float(t), 0.0))
>>> [(b.block.n, b.seq_lo) for b in w.buckets]      # sizes double into the past
[(20, 0), (20, 20), (10, 40), (10, 50)]
>>> w.total, w.first_seq
(Block(n=60, mean=2.5, m2=175.0), 0)
"""

from __future__ import annotations

from ..base import Component
from ..increments import Block

__all__ = ["Bucket", "SeriesWindow"]


class Bucket:
    """The block of increments of the events ``seq_lo .. seq_hi``; ``level``: it merged
    ``2 ** level`` messages' blocks.

    >>> Bucket(Block(10, 0.5, 1.0), 0, 9)
    Bucket(Block(n=10, mean=0.5, m2=1.0), seq_lo=0, seq_hi=9, level=0)
    """

    __slots__ = ("block", "seq_lo", "seq_hi", "level")

    def __init__(self, block: Block, seq_lo: int, seq_hi: int, level: int = 0):
        self.block = block
        self.seq_lo = seq_lo
        self.seq_hi = seq_hi
        self.level = level

    def __repr__(self) -> str:
        return f"Bucket({self.block!r}, seq_lo={self.seq_lo}, seq_hi={self.seq_hi}, level={self.level})"

    def __reduce__(self) -> tuple:
        return Bucket, (self.block, self.seq_lo, self.seq_hi, self.level)


class SeriesWindow(Component):
    """Blocks of one series in an exponential histogram (ADWIN's bucket scheme over blocks): at most
    ``buckets_per_level`` buckets of each size, sizes doubling into the past, so candidate cuts are
    fine near the present and coarse in the past; prefix sums make each side one subtraction.
    Older buckets are dropped once the rest holds ``max_increments`` increments."""

    def __init__(self, max_increments: int = 20_000, buckets_per_level: int = 2):
        if max_increments < 1 or buckets_per_level < 2:
            raise ValueError(f"max_increments={max_increments} must be >= 1 and "
                             f"buckets_per_level={buckets_per_level} >= 2")
        self.max_increments = max_increments
        self.buckets_per_level = buckets_per_level
        self._reset()

    def _reset(self) -> None:
        self.buckets: list[Bucket] = []
        #: ``prefixes[i]``: the block of ``buckets[: i + 1]``
        self.prefixes: list[Block] = []

    @property
    def total(self) -> Block:
        return self.prefixes[-1] if self.prefixes else Block.EMPTY

    @property
    def n(self) -> int:
        return self.prefixes[-1].n if self.prefixes else 0

    @property
    def first_seq(self) -> int | None:
        """The first event the window may cover (None: empty)."""
        return self.buckets[0].seq_lo if self.buckets else None

    def before(self, i: int) -> Block:
        """The block of ``buckets[:i]``: the side before boundary ``i``."""
        return self.prefixes[i - 1] if i > 0 else Block.EMPTY

    def add(self, seq_lo: int, seq_hi: int, block: Block) -> None:
        b, pre = self.buckets, self.prefixes
        b.append(Bucket(block, seq_lo, seq_hi))
        pre.append(self.total + block)
        # compress: each level is one run; a run longer than M merges its two oldest buckets into
        # one of the next level (only the merged-away boundary's prefix sum goes)
        M = self.buckets_per_level
        end, level = len(b) - 1, 0
        while True:
            j = end
            while j >= 0 and b[j].level == level:
                j -= 1
            if end - j <= M:
                break
            k = j + 1
            x, y = b[k], b[k + 1]
            b[k : k + 2] = [Bucket(x.block + y.block, x.seq_lo, y.seq_hi, level + 1)]
            del pre[k]
            end, level = k, level + 1
        if len(b) > 1 and self.n - b[0].block.n >= self.max_increments:
            k = 0
            n = self.n
            while len(b) - k > 1 and n - b[k].block.n >= self.max_increments:
                n -= b[k].block.n
                k += 1
            self.drop_before(k)

    def copy(self) -> SeriesWindow:
        """A copy that later adds and drops of this window leave as it is (buckets and blocks
        are never changed in place, so they are shared)."""
        out = SeriesWindow(self.max_increments, self.buckets_per_level)
        out.buckets, out.prefixes = list(self.buckets), list(self.prefixes)
        return out

    def drop_before(self, i: int) -> None:
        """Forget ``buckets[:i]``."""
        del self.buckets[:i]
        acc = Block.EMPTY
        self.prefixes = []
        for x in self.buckets:
            acc = acc + x.block
            self.prefixes.append(acc)

    def upto(self, seq: int) -> int:
        """How many buckets end before event ``seq`` (only the newest bucket, a single
        message's block, can end later)."""
        b = self.buckets
        return len(b) - 1 if b and b[-1].seq_hi >= seq else len(b)

    def split(self, seq: int, upto: int | None = None, since: int | None = None) -> tuple[Block | None, Block | None]:
        """Increments before and from the bucket boundary nearest to event ``seq`` (None: empty
        side), of the buckets that end before event ``upto`` (default: all) and, before it, from
        the boundary nearest to event ``since`` (default: the oldest).

        >>> w = SeriesWindow(max_increments=100)
        >>> for t in range(6):
        ...     w.add(10 * t, 10 * t + 9, Block(10, float(t), 0.0))
        >>> [(s.n, s.mean) for s in w.split(40)], [(s.n, s.mean) for s in w.split(40, since=20)]
        ([(40, 1.5), (20, 4.5)], [(20, 2.5), (20, 4.5)])
        """
        k = len(self.buckets) if upto is None else self.upto(upto)
        if not k:
            return None, None
        i = self._nearest(seq, k)
        before = self.before(i)
        after = self.before(k) - before
        if since is not None:  # the boundary nearest to ``since``, at least one before the cut's
            j = min(self._nearest(since, k), i - 1) if i else 0
            before = before - self.before(j)
        return (before if before.n else None), (after if after.n else None)

    def span(self, since: int = 0, upto: int | None = None) -> list[Bucket]:
        """The buckets that end before event ``upto`` (default: all) and begin at or after
        event ``since``: none of an event before it, however coarse the old buckets are.

        >>> w = SeriesWindow(max_increments=100)
        >>> for t in range(6):
        ...     w.add(10 * t, 10 * t + 9, Block(10, float(t), 0.0))
        >>> [(b.seq_lo, b.seq_hi) for b in w.span(since=15, upto=50)]
        [(20, 39), (40, 49)]
        """
        k = len(self.buckets) if upto is None else self.upto(upto)
        return [b for b in self.buckets[:k] if b.seq_lo >= since]

    def _nearest(self, seq: int, k: int) -> int:
        """The boundary among the first ``k`` buckets' nearest to event ``seq``."""
        b = self.buckets
        return min(range(k + 1), key=lambda i: abs((b[i].seq_lo if i < k else b[k - 1].seq_hi + 1) - seq))
