#!/usr/bin/env bash
# All tests: unit, statistical, contract, doctests, integration and end-to-end against a real
# local Kafka broker that the test session starts and stops itself. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup.sh
.venv/bin/ruff check pipeline agents schemas tests
exec .venv/bin/python -m pytest "$@"
