#!/usr/bin/env bash
# Create .venv (Python 3.11) with streamxai and its test tools; resolve the Kafka jars.
# Idempotent: a second run only checks. Used by deploy/demo.sh and deploy/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-}"
if [[ -z "$PY" ]]; then
  for cand in python3.11 python3; do
    if command -v "$cand" >/dev/null && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      PY="$cand"; break
    fi
  done
fi
if [[ -z "$PY" ]]; then
  echo "setup: Python 3.11 is needed (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi
if [[ ! -x .venv/bin/python ]]; then
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  # an interrupted pip upgrade leaves a venv without pip: put it back, then reinstall
  echo "setup: .venv has no pip; restoring it with ensurepip"
  .venv/bin/python -m ensurepip --upgrade >/dev/null
  rm -f .venv/.streamxai-installed
fi
stamp=.venv/.streamxai-installed
if [[ ! -f "$stamp" || pyproject.toml -nt "$stamp" ]]; then
  echo "setup: installing streamxai and its dependencies into .venv (log: .venv/pip.log)"
  if ! { .venv/bin/python -m pip install --upgrade pip && .venv/bin/python -m pip install -e '.[test]'; } > .venv/pip.log 2>&1; then
    tail -30 .venv/pip.log >&2
    echo "setup: pip install failed; the full log is .venv/pip.log" >&2
    exit 1
  fi
  touch "$stamp"
fi
.venv/bin/python -c 'from pipeline.local.broker import LocalBroker; LocalBroker().ensure_jars()'
