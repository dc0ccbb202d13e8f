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
    """The demo's agrawal stream (function 1, no drift) under the 30,000-event demo's settings
    (smoothing 0.003): around event 10,000 the tree learns salary better, its iPFI rises and its
    loss falls steadily over thousands of events, though the two sides of the change's cut
    alone do not differ (z within its interval). That is the model learning, not a
    ``reliance_shift``: no episode of this stream until then is an alert."""
    s = Settings(features=list(AGRAWAL_FEATURES), **demo_settings(30_000))
    run = run_in_process(s, (Recorded(e) for e in agrawal_events("demo30k", 10_740, None, None, seed=42)))
    assert run.kinds and [k for k in run.kinds if k[3]] == []  # episodes, none of them an alert
