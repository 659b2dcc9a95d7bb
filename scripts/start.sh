#!/usr/bin/env bash
# Sets everything up, runs the short tour, builds the course site (notebooks executed against
# the solutions) and serves it on http://127.0.0.1:$PORT/ (default 8000). Before each step it
# says what the step does and about how long it takes; while a long step runs it shows progress.
# The times: issue 37's fresh clone on this project's 2-core machine took about 6 minutes
# before the site was served, 206 s of them the site's build (13 notebooks executed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."  # the repo root, wherever the clone lives

say() { printf 'start: %s\n' "$*"; }
HEARTBEAT_S="${TINYFW_HEARTBEAT_S:-30}"  # seconds between "still running" lines

# Runs a command; every HEARTBEAT_S seconds while it runs, says that it still runs and for how
# long. The heartbeat ends with the command, or within HEARTBEAT_S of this script if it is
# stopped (Ctrl-C).
with_heartbeat() {
  local label="$1" began=$SECONDS status=0 beat
  shift
  (while sleep "$HEARTBEAT_S" && kill -0 $$ 2>/dev/null; do
     say "$label: still running, $((SECONDS - began)) s so far"
   done) &
  beat=$!
  "$@" || status=$?
  kill "$beat" 2>/dev/null || true
  wait "$beat" 2>/dev/null || true
  return "$status"
}

say "step 1 of 4, setting up (scripts/setup.sh): the first time, a few minutes (Debian" \
    "packages, then pip downloads the pinned packages, torch the largest); after that, under" \
    "a second"
with_heartbeat "setting up" bash scripts/setup.sh

source scripts/env.sh
PORT="${PORT:-8000}"

# 2. The tour: a short look at what tinyfw does.
if [ -f tinyfw/tour.py ]; then
  say "step 2 of 4, the tour (python -m tinyfw.tour): a few seconds, it compiles a few kernels"
  .venv/bin/python -m tinyfw.tour
else
  say "step 2 of 4, the tour: skipped, tinyfw/tour.py is not there yet"
fi

# 3. The site, with every notebook executed against the solutions. mkdocs names each notebook
#    as it starts executing it; build_site numbers them.
notebooks=(chapters/[0-9][0-9]_*/*.ipynb)
build_site() {
  local n=0 line
  TINYFW_IMPL=solutions .venv/bin/mkdocs build --strict -d build/site 2>&1 \
    | while IFS= read -r line; do
        if [[ "$line" == *"Converting notebook"* ]]; then
          n=$((n + 1))
          say "site: notebook $n of ${#notebooks[@]}, chapters/${line##*/chapters/}"
        else
          printf '%s\n' "$line"
        fi
      done
}
say "step 3 of 4, building the site into build/site (mkdocs): the longest step, it executes" \
    "the ${#notebooks[@]} chapter notebooks; about 3.5 minutes on a 2-core machine"
began=$SECONDS
with_heartbeat "building the site" build_site
say "site built in $((SECONDS - began)) s"

# 4. Serve it with a plain static server until Ctrl-C.
say "step 4 of 4, serving the site at http://127.0.0.1:$PORT/ until Ctrl-C"
.venv/bin/python -m http.server "$PORT" --bind 127.0.0.1 --directory build/site
