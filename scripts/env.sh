# Sourced by start.sh and test.sh: the environment tinyfw's devices and tools expect.
# A private runtime dir (Vulkan and chromium want one, 0700 as mktemp makes it), removed on exit.
XDG_RUNTIME_DIR="$(mktemp -d /tmp/tinyfw-xdg.XXXXXX)"
export XDG_RUNTIME_DIR
trap 'rm -rf "$XDG_RUNTIME_DIR"' EXIT
export WGPU_BACKEND_TYPE=Vulkan  # WebGPU runs on mesa's CPU Vulkan (lavapipe) on Linux
export NO_MKDOCS_2_WARNING=1
