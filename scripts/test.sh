#!/usr/bin/env bash
# Sets up (idempotent; the tests use the small 0.5B model), checks lint (ruff), types (mypy) and the docs site
# (mkdocs build --strict: every page, link and anchor), then runs the whole test suite, end-to-end tests with
# the real local model included. Extra arguments go to pytest. The replays of the committed benchmark figures
# are a command of their own: .venv/bin/verifiedsql bench verify (.ci/run runs both).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=0.5b bash scripts/setup.sh
printf '\n==> ruff check\n' >&2
.venv/bin/ruff check verifiedsql tests benchmarks
printf '\n==> mypy\n' >&2
.venv/bin/mypy
printf '\n==> mkdocs build --strict\n' >&2
site="$(mktemp -d)"
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$site"
rm -rf "$site"
# the tests on every core (at most 4 workers); the end-to-end tests share one worker and so one model server
exec .venv/bin/python -m pytest -n auto --maxprocesses 4 --dist loadgroup "$@"
