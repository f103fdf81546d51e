#!/usr/bin/env bash
# Sets up (idempotent; the tests use the small 0.5B model), then runs the whole test suite,
# end-to-end tests with the real local model included. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=0.5b bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
