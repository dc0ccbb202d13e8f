"""Change detection on the explanation stream: :mod:`.window` keeps the recent increments of one
series (:class:`SeriesWindow` of :class:`Bucket` s), :mod:`.test` the sequential two-sample test
of one series (:class:`SeriesTest`), its statistic (:func:`two_sample_z`) and threshold, and
what it reports (:class:`Cut`), :mod:`.dependence` how serial dependence inflates the variance
of a series' means (:class:`SerialVariance`), :mod:`.events` one series' change with its context
(:class:`Change`), :mod:`.episodes` changes that happened together (:class:`Episode`), and
:mod:`.stream` all series of one stream (:class:`StreamChangeDetector`).
"""

from .dependence import SerialVariance
from .episodes import Episode
from .events import Change, ranks
from .stream import StreamChangeDetector
from .test import Cut, SeriesTest, threshold, two_sample_z
from .window import Bucket, SeriesWindow

__all__ = ["Bucket", "Change", "Cut", "Episode", "SerialVariance", "SeriesTest", "SeriesWindow", "StreamChangeDetector",
           "ranks", "threshold", "two_sample_z"]
