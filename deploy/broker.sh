#!/usr/bin/env bash
# Start, stop or inspect the local Kafka broker: deploy/broker.sh start|stop|status [--port N] [--data-dir D]
# Same as `python -m streamxai.local.broker ...` (and `streamxai broker ...`), run from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [[ -x .venv/bin/python && -z "${PYTHON:-}" ]]; then PY=.venv/bin/python; fi
exec "$PY" -m streamxai.local.broker "$@"
