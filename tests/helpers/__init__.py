"""What several test modules share (a test module never imports another test module).

``pyproject.toml`` puts ``tests/`` on pytest's path, so tests import these as ``helpers.*``:

- ``pipeline_runs``: settings, workers' metrics and collecting output for runs on a broker;
- ``handler_inputs``: handler settings and ``explanation/v4`` payloads for the handler tests, and
  ``run_handlers`` (the model, explain and change handlers of one worker, in process);
- ``agrawal_truth``: exact SAGE and PFI ground truth of agrawal classification function 1;
- ``streams``: small seeded streams (``threshold_events``, ``linear_events``);
- ``profiles_run``: one worker serving two stream profiles side by side, on a broker.

Fixtures that need pytest's machinery (the broker, topics, group ids) stay in ``conftest.py``.
"""
