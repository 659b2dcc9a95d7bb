#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and its driver: sets up, then runs the op test suite (with the
# long sums, the work-group kernels of chapter 11 and the CUDA graphs of TinyJit) on the CUDA device and grades chapter 07 on it (your exercises/ code; TINYFW_IMPL=solutions for the
# reference), and prints a summary line for each. Extra arguments go to both pytest runs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
source scripts/env.sh

if ! .venv/bin/python -c "from tinyfw.device import Device; Device['CUDA']" 2>/tmp/tinyfw-cuda.err
then
  echo "test_cuda: the CUDA device does not work here:" >&2
  tail -n 1 /tmp/tinyfw-cuda.err >&2
  exit 1
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'

results=()
status=0
run() {  # run NAME COMMAND...: run a pytest, remember its last line
  local name="$1"; shift
  local log; log="$(mktemp)"
  echo "test_cuda: $name: $*"
  set +e
  "$@" 2>&1 | tee "$log"
  local code="${PIPESTATUS[0]}"
  set -e
  results+=("$name: $(grep -E '[0-9]+ (passed|failed)' "$log" | tail -n 1) (exit $code)")
  [ "$code" -eq 0 ] || status=1
  rm -f "$log"
}
run "op suite on CUDA" env DEVICE=CUDA .venv/bin/python -m pytest tests/api/test_ops.py \
  tests/numerics/test_reduce_accuracy.py tests/devices/test_workgroups.py \
  tests/unit/test_jit_graph.py -q -ra "$@"
run "chapter 07 on CUDA" .venv/bin/python -m pytest chapters/07 -q -ra "$@"

echo
echo "summary"
printf '  %s\n' "${results[@]}"
exit "$status"
