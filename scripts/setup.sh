#!/usr/bin/env bash
# Prepares a fresh machine for verifiedsql: Debian packages (PostgreSQL for the tests, bubblewrap for
# the sandbox), a virtual environment in .venv with the package and its test tools, llama-cpp-python
# built with CPU flags that work here (wheel cached under ~/.cache/verifiedsql), and the embedded model.
#   MODEL=1.5b|0.5b|none   which embedded model to install now (default 1.5b; the tests use 0.5b)
# Safe to run again: every step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${MODEL:-1.5b}
step() { printf '\n==> %s\n' "$*" >&2; }

need_apt=()
command -v bwrap >/dev/null 2>&1 || need_apt+=(bubblewrap)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)  # the HTML report's browser test
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_apt+=(postgresql)
if [ ${#need_apt[@]} -gt 0 ]; then
  step "installing Debian packages: ${need_apt[*]}"
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  step "creating .venv"
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi
step "installing verifiedsql and its dependencies into .venv"
.venv/bin/python -m pip install -q -e ".[dev]"

step "llama-cpp-python (built once with flags this CPU supports, then reused from the wheel cache)"
PY=.venv/bin/python bash scripts/build-llama-wheel.sh

for model in $(echo "$MODEL" | tr ',' ' '); do
  [ "$model" = none ] && continue
  step "embedded model $model (downloaded and SHA-256 checked once)"
  .venv/bin/verifiedsql llm install --model "$model"
done
step "setup done"
