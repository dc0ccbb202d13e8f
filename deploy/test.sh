#!/usr/bin/env bash
# All tests: unit, statistical, contract, doctests, integration and end-to-end against a real
# local Kafka broker that the test session starts and stops itself. Extra arguments go to pytest.
#
#   bash deploy/test.sh          everything (what CI runs, .ci/run)
#   bash deploy/test.sh --fast   the quick run while you work: no broker and no slow statistical
#                                tests (pytest -m "not slow and not integration"), under 2 minutes
#                                on 2 cores; run everything before you push
set -euo pipefail
cd "$(dirname "$0")/.."
select=()
if [[ "${1:-}" == "--fast" ]]; then
  shift
  select=(-m "not slow and not integration")
  echo "test: fast run (-m \"not slow and not integration\"): no broker, no slow tests; bash deploy/test.sh runs all"
fi
bash deploy/setup.sh
.venv/bin/ruff check pipeline agents schemas tests
if [[ ${#select[@]} -eq 0 ]]; then
  if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    echo "test: chromium found; the dashboard browser test runs"
  else
    echo "test: chromium or chromedriver missing; the dashboard browser test is SKIPPED (apt-get install chromium chromium-driver)"
  fi
fi
# Tests run in parallel processes (pytest-xdist): by default one per core, at least 2 (many tests
# wait on the broker or on a worker process rather than compute) and at most 4 (each process
# starts its own broker). STREAMXAI_TEST_PROCESSES=N sets it; 0 runs them all in this process.
# tests/conftest.py keeps tests that share a costly fixture in one process.
cores="$(nproc 2>/dev/null || echo 2)"
processes="${STREAMXAI_TEST_PROCESSES:-$(( cores < 2 ? 2 : cores > 4 ? 4 : cores ))}"
exec .venv/bin/python -m pytest -n "$processes" --dist loadgroup ${select[@]+"${select[@]}"} "$@"
