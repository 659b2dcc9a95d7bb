#!/usr/bin/env bash
# Sets everything up, then runs every test (tests/ also grades each chapter, builds the site and
# runs the browser test). Extra arguments go to pytest. Exits non-zero when anything fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."  # the repo root, wherever the clone lives

bash scripts/setup.sh

source scripts/env.sh

echo "test: running .venv/bin/python -m pytest tests -q -ra $*"
status=0
.venv/bin/python -m pytest tests -q -ra "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "test: FAILED, pytest collected no tests" >&2  # exit code 5: nothing ran
elif [ "$status" -ne 0 ]; then
  echo "test: FAILED (pytest exit code $status)" >&2
else
  echo "test: all tests passed"
fi
exit "$status"
