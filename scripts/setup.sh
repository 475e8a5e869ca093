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
# OCR (scholarflow/ingest/ocr.py): RapidOCR comes with .[dev] (the ocr extra); the Tesseract
# program, which `auto` prefers for Latin text, is Debian's packages, when this machine can
# install them (as root); without it the Tesseract tests are skipped.
if ! command -v tesseract >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 \
    && [ "$(id -u)" = 0 ]; then
  packages="tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim"
  # shellcheck disable=SC2086
  apt-get install -y -qq $packages >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq $packages >/dev/null 2>&1; } \
    || echo "Tesseract could not be installed: the OCR tests will be skipped" >&2
fi
# The JavaScript client tests (tests/integration/js): @langchain/langgraph-sdk at the locked version.
# `npm ci` installs exactly package-lock.json; --prefer-offline uses npm's cache when it can.
if command -v npm >/dev/null 2>&1; then
  npm ci --prefix tests/integration/js --prefer-offline --no-audit --no-fund --loglevel=error
else
  echo "npm not found: tests/integration/test_sdk_clients.py's JavaScript test will be skipped" >&2
fi
