#!/usr/bin/env bash
# Sets everything up, lints (ruff and mypy), then runs every test: tests/ (the framework on the
# CPU device, every chapter's grading, the site build and the browser test), then the Tensor
# API suites (tests/api/test_api_*.py) on NUMPY, then on each backend device of TINYFW_DEVICES
# (default: CL WEBGPU CUDAEMU; all run on the CPU here) the op, accuracy, edge-input and Tensor
# API suites (there the larger API suites run a subset of their cases: tests/conftest.py).
# Last, SmolLM2's greedy tokens on those devices (tests/models/test_llama.py,
# TINYFW_LLM_DEVICES=1).
# Extra arguments go to the first pytest run only, and then the device runs are left out.
# Exits non-zero when anything fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."  # the repo root, wherever the clone lives

bash scripts/setup.sh

source scripts/env.sh

devices="${TINYFW_DEVICES-CL WEBGPU CUDAEMU}"
[ "$#" -eq 0 ] || devices=""
results=()
status=0

# run NAME COMMAND...: runs one pytest, remembers its outcome for the summary.
run() {
  local name="$1"; shift
  echo "test: $name: $*"
  local start=$SECONDS code=0
  "$@" || code=$?
  local took=$((SECONDS - start))
  if [ "$code" -eq 0 ]; then
    results+=("passed  $name (${took}s)")
  elif [ "$code" -eq 5 ]; then
    results+=("FAILED  $name: pytest collected no tests")  # exit code 5: nothing ran
    status=1
  else
    results+=("FAILED  $name (pytest exit code $code, ${took}s)")
    status=1
  fi
}

# lint: ruff on the repo, mypy on tinyfw/, chapters/ and tools/, and import-linter's contract
# of tinyfw's layers (settings of all three in pyproject.toml), first: seconds. One summary line.
lint() {
  echo "test: lint: ruff check . && mypy && lint-imports"
  local start=$SECONDS failed=()
  .venv/bin/ruff check . || failed+=(ruff)
  .venv/bin/mypy || failed+=(mypy)
  .venv/bin/lint-imports --no-cache || failed+=(lint-imports)
  local took=$((SECONDS - start))
  if [ "${#failed[@]}" -eq 0 ]; then
    results+=("passed  lint: ruff, mypy and lint-imports (${took}s)")
  else
    results+=("FAILED  lint: ${failed[*]} found problems (${took}s)")
    status=1
  fi
}
lint

# Two pytest workers (pytest-xdist), one per core: most of the time goes to compiling kernels,
# one compiler run at a time per worker. In tests/ a module stays on one worker (--dist
# loadgroup, a module a group: its fixtures, like the built site, are made once), and the
# course's gradings on the solutions and on fresh stubs are two groups (tests/workers.py).
workers=(-n "${TINYFW_WORKERS:-2}")
run "tests/ on CPU" .venv/bin/python -m pytest tests -q -ra "${workers[@]}" --dist loadgroup "$@"
# Every Tensor API suite of issue 11 on NUMPY, then on each device together with the op,
# accuracy and edge-input suites: one pytest run per device (its start and its last tests, when
# one worker waits for the other, paid once). NUMPY runs every case. On a backend device the
# suites marked device_subset (ops; scans, shape, creation, nn, elementwise, linalg, call forms)
# run only the distinct cases of each parametrized test: every method, dtype, mode and argument
# value and every empty or 0-d shape, not each size again (tests/conftest.py says how;
# TINYFW_DEVICE_SUBSET=0 runs them all). The other suites run in full. The random API programs
# against torch (tests/numerics/test_differential_api.py, issue 38) run their first 50 programs
# there, and ONNX's node tests the first case of each operator (tests/onnx/onnx_node_suite.py).
run "Tensor API suites (tests/api/test_api_*.py) on NUMPY" env DEVICE=NUMPY \
  .venv/bin/python -m pytest tests/api/test_api_*.py -q -ra "${workers[@]}" --dist load
for device in $devices; do
  run "op, accuracy, edge-input and Tensor API suites on $device" env DEVICE="$device" \
    .venv/bin/python -m pytest tests/api/test_ops.py tests/numerics/test_accuracy.py \
    tests/api/test_edge_inputs.py tests/numerics/test_reduce_accuracy.py \
    tests/models/test_gguf_quants.py tests/api/test_api_*.py \
    tests/numerics/test_differential_api.py tests/onnx/test_onnx_node.py \
    tests/onnx/test_onnx_node_b.py -q -ra "${workers[@]}" --dist load
done
# SmolLM2's 8 greedy tokens on each device against transformers' (each compiles the model's
# kernels: about 40 s for the three, two workers). Left out of tests/ on CPU: a developer's
# pytest run stays minutes shorter.
if [ -n "$devices" ]; then
  run "SmolLM2's greedy tokens on CL, WEBGPU and CUDAEMU" env TINYFW_LLM_DEVICES=1 \
    .venv/bin/python -m pytest tests/models/test_llama.py -k other_devices -q -ra "${workers[@]}" \
    --dist load
fi

echo
echo "test: summary"
printf '  %s\n' "${results[@]}"
if [ "$status" -eq 0 ]; then echo "test: all tests passed"; else echo "test: FAILED" >&2; fi
exit "$status"
