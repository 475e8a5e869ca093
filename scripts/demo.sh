#!/usr/bin/env bash
# Quick start 1: set up, then ask a real question about an example paper.
#
# With OPENAI_API_KEY / OPENAI_BASE_URL set, your model answers. Without them
# the demo starts the bundled offline model (an extractive stand-in that
# quotes the passages that best match the question) and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export SCHOLARFLOW_HOME="${SCHOLARFLOW_HOME:-$PWD/.scholarflow}"
QUESTION="${1:-What learning rate and batch size did the AnchorWindow authors use?}"
PAPER="${2:-examples/papers/en_sparse_attention.md}"

fake_pid=""
cleanup() { [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null || true; }
trap cleanup EXIT
if [ -z "${OPENAI_API_KEY:-}" ] && [ -z "${OPENAI_BASE_URL:-}" ]; then
  log="$(mktemp)"
  .venv/bin/python -m tests.support.fake_openai --port 0 --mode extractive >"$log" 2>&1 &
  fake_pid=$!
  for _ in $(seq 100); do
    grep -q "listening on" "$log" && break
    sleep 0.1
  done
  export OPENAI_BASE_URL="$(grep -o 'http://[^ ]*' "$log")" OPENAI_API_KEY="offline-demo"
  echo "note: no OPENAI_API_KEY or OPENAI_BASE_URL set; answering with the bundled offline" \
       "extractive model (it quotes the best-matching sentences). Set them for real answers." >&2
fi
echo "\$ scholarflow ask \"$QUESTION\" --file $PAPER" >&2
.venv/bin/scholarflow ask "$QUESTION" --file "$PAPER"
