"""The demo's stream pages nothing while its model is still learning (no alert after the
warm-up on a stationary stream with a learning model), in process, as the workers run it."""

from __future__ import annotations

import pytest
from streamxai.local.demo import demo_settings
from streamxai.local.demo_stream import agrawal_events
from streamxai.reference import Recorded, run_in_process
from streamxai.settings import AGRAWAL_FEATURES, Settings


@pytest.mark.slow
def test_the_demo_stream_does_not_page_while_its_tree_learns():
    """Was: the demo's agrawal stream (function 1, no drift) under the 30,000-event demo's
    settings (smoothing 0.003) paged at event 10,729: an episode of kind ``reliance_shift``, iPFI
    of salary 0.16 -> 0.29 from event 8,680, while the model's loss went 0.289 -> 0.272 on the
    two sides of that cut (z = -1.3, within its interval), though it had been falling for
    thousands of events (0.314 over events 6,000-6,999, 0.259 over 9,000-9,999, 0.222 over
    10,000-10,999): "the tree learned salary better and its loss fell". No episode of this
    stream until then is an alert."""
    s = Settings(features=list(AGRAWAL_FEATURES), **demo_settings(30_000))
    run = run_in_process(s, (Recorded(e) for e in agrawal_events("demo30k", 10_740, None, None, seed=42)))
    assert run.kinds and [k for k in run.kinds if k[3]] == []  # episodes, none of them an alert
