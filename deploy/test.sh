#!/usr/bin/env bash
# All tests: unit, statistical, contract, doctests, integration and end-to-end against a real
# local Kafka broker that the test session starts and stops itself. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup.sh
.venv/bin/ruff check pipeline agents schemas tests
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  echo "test: chromium found; the dashboard browser test runs"
else
  echo "test: chromium or chromedriver missing; the dashboard browser test is SKIPPED (apt-get install chromium chromium-driver)"
fi
exec .venv/bin/python -m pytest "$@"
