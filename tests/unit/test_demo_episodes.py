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
    """The demo's agrawal stream under its settings: the tree learning salary around 10,000 (iPFI up, loss
    falling, the cut's sides alike) is no ``reliance_shift``: no alert until then."""
    s = Settings(features=list(AGRAWAL_FEATURES), **demo_settings(30_000))
    run = run_in_process(s, (Recorded(e) for e in agrawal_events("demo30k", 10_740, None, None, seed=42)))
    assert run.kinds and [k for k in run.kinds if k[3]] == []  # episodes, none of them an alert
