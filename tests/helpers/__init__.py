"""What several test modules share (a test module never imports another test module).

``pyproject.toml`` puts ``tests/`` on pytest's path, so tests import these as ``helpers.*``:

- ``pipeline_runs``: settings, workers' metrics and collecting output for runs on a broker;
- ``handler_inputs``: handler settings and ``explanation/v2`` payloads for the handler tests;
- ``agrawal_truth``: exact SAGE and PFI ground truth of agrawal classification function 1;
- ``streams``: small seeded streams (``threshold_events``).

Fixtures that need pytest's machinery (the broker, topics, group ids) stay in ``conftest.py``.
"""
