#!/usr/bin/env bash
# Create .venv (if missing) and install scholarflow with its dev tools into it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
# The JavaScript client tests (tests/integration/js): @langchain/langgraph-sdk at the locked version.
# `npm ci` installs exactly package-lock.json; --prefer-offline uses npm's cache when it can.
if command -v npm >/dev/null 2>&1; then
  npm ci --prefix tests/integration/js --prefer-offline --no-audit --no-fund --loglevel=error
else
  echo "npm not found: tests/integration/test_sdk_clients.py's JavaScript test will be skipped" >&2
fi
