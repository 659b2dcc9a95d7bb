#!/usr/bin/env bash
# Sets everything up, then runs every test (tests/ also grades each chapter, builds the site and
# runs the browser test). Extra arguments go to pytest. Exits non-zero when anything fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."  # the repo root, wherever the clone lives

bash scripts/setup.sh

# A private runtime dir (Vulkan and chromium want one), removed on exit.
XDG_RUNTIME_DIR="$(mktemp -d /tmp/tinyfw-xdg.XXXXXX)"  # mktemp makes it 0700
export XDG_RUNTIME_DIR
trap 'rm -rf "$XDG_RUNTIME_DIR"' EXIT
export WGPU_BACKEND_TYPE=Vulkan  # WebGPU chapters run on mesa's CPU Vulkan
export NO_MKDOCS_2_WARNING=1

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
