#!/usr/bin/env bash
# One command from a fresh clone to an answer: set everything up, then ask the sample database a
# question with the embedded default model (Qwen2.5-Coder-1.5B-Instruct, local, no account needed;
# MODEL=0.5b for the small one).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
QUESTION=${1:-"How many customers are there in each country?"}
echo
echo "question: $QUESTION"
.venv/bin/verifiedsql ask sqlite:///examples/shop.db "$QUESTION" --model "${MODEL:-1.5b}"
