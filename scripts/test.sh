#!/usr/bin/env bash
# Sets up (idempotent; the tests use the small 0.5B model), checks lint (ruff) and types (mypy), then runs the
# whole test suite, end-to-end tests with the real local model included. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=0.5b bash scripts/setup.sh
printf '\n==> ruff check\n' >&2
.venv/bin/ruff check verifiedsql tests benchmarks
printf '\n==> mypy\n' >&2
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
