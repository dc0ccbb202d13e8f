#!/usr/bin/env bash
# The main job: local Kafka broker, a worker, a drifting demo stream, live explanations
# and change events in the terminal. Extra arguments go to `streamxai demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/setup.sh
exec .venv/bin/streamxai demo "$@"
