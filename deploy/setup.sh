#!/usr/bin/env bash
# Create a virtualenv (default .venv) with streamxai and its test tools; resolve the Kafka jars.
# Idempotent: a second run only checks. Used by deploy/demo.sh, deploy/test.sh and .ci/run.
#
#   bash deploy/setup.sh                          .venv with the first of python3.11, python3.12,
#                                                 python3.13, python3 that is 3.11 to 3.13
#   PYTHON=python3.13 VENV=.venv313 bash deploy/setup.sh --no-jars
#                                                 another venv on a given Python (what .ci/run does
#                                                 for the unit tests on 3.12 and 3.13)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
jars=1
if [[ "${1:-}" == "--no-jars" ]]; then jars=0; fi
supported='import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))'
PY="${PYTHON:-}"
if [[ -z "$PY" ]]; then
  for cand in python3.11 python3.12 python3.13 python3; do
    if command -v "$cand" >/dev/null && "$cand" -c "$supported" 2>/dev/null; then
      PY="$cand"; break
    fi
  done
fi
if [[ -z "$PY" ]] || ! "$PY" -c "$supported" 2>/dev/null; then
  # say why: a command that does not run (a pyenv shim of a version not selected) or another version
  why="found none"
  if [[ -n "$PY" ]]; then
    if version="$("$PY" -c 'import sys; print(sys.version.split()[0])' 2>&1)"; then
      why="$PY is Python $version"
    else
      why="$PY does not run ($(printf '%s' "$version" | head -1))"
    fi
  fi
  hint="set PYTHON=/path/to/python3.x"
  wanted="${PY##*python}"  # python3.13 -> 3.13: pyenv's copy of that version first
  for v in "$wanted" 3.11 3.12 3.13; do  # pyenv's own copies run without being selected
    [[ "$v" =~ ^3\.1[123]$ ]] || continue
    for c in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/"python$v"; do
      if [[ -x "$c" ]]; then hint="set PYTHON=$c, or another python3.x"; break 2; fi
    done
  done
  echo "setup: Python 3.11, 3.12 or 3.13 is needed: $why; $hint" >&2
  exit 1
fi
if [[ -x "$VENV/bin/python" ]] && ! "$VENV/bin/python" -c "$supported" 2>/dev/null; then
  echo "setup: $VENV is not on Python 3.11 to 3.13; delete it and run this again" >&2
  exit 1
fi
if [[ ! -x "$VENV/bin/python" ]]; then
  echo "setup: creating $VENV with $("$PY" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
  "$PY" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
  # an interrupted pip upgrade leaves a venv without pip: put it back, then reinstall
  echo "setup: $VENV has no pip; restoring it with ensurepip"
  "$VENV/bin/python" -m ensurepip --upgrade >/dev/null
  rm -f "$VENV/.streamxai-installed"
fi
stamp="$VENV/.streamxai-installed"
# reinstall when the package's metadata or any of the compiled kernels' sources changed (pip builds
# pipeline/core/_kernels*.c and _kernels.h into one file next to them, one per Python version)
kernels_changed=0
for f in pipeline/core/_kernels*.c pipeline/core/_kernels*.h; do
  if [[ -f "$stamp" && "$f" -nt "$stamp" ]]; then kernels_changed=1; fi
done
if [[ ! -f "$stamp" || pyproject.toml -nt "$stamp" || setup.py -nt "$stamp" || $kernels_changed == 1 ]]; then
  echo "setup: installing streamxai and its dependencies into $VENV (log: $VENV/pip.log)"
  if ! { "$VENV/bin/python" -m pip install --upgrade pip && "$VENV/bin/python" -m pip install -e '.[test]'; } > "$VENV/pip.log" 2>&1; then
    tail -30 "$VENV/pip.log" >&2
    echo "setup: pip install failed; the full log is $VENV/pip.log" >&2
    exit 1
  fi
  touch "$stamp"
  if ! "$VENV/bin/python" -c 'import streamxai.core._kernels' 2>/dev/null; then
    # optional: the pure-Python path runs (CI sets STREAMXAI_REQUIRE_KERNEL=1, which fails a test)
    echo "setup: the compiled kernels (pipeline/core/_kernels*.c) did not build, so the slower pure-Python" \
         "path runs; a C compiler and the Python headers build them (the log: $VENV/pip.log)" >&2
  fi
fi
if [[ $jars == 1 ]]; then
  "$VENV/bin/python" -c 'from streamxai.local.broker import LocalBroker; LocalBroker().ensure_jars()'
fi
