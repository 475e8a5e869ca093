#!/usr/bin/env bash
# Quick start 2: set up, then run the linters, the type checker and the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy
# Three workers on CI's two cores: many tests wait (retries, timeouts, servers starting).
# tests/conftest.py keeps the tests that share PostgreSQL or `langgraph dev` on one worker;
# `-n 0` after it runs everything in one process.
.venv/bin/python -m pytest -n 3 "$@"
