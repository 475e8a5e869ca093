#!/usr/bin/env bash
# Quick start 2: set up, then run the linters, the type checker and the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
