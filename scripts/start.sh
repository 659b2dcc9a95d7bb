#!/usr/bin/env bash
# Sets everything up, runs the 20-second tour, builds the course site (notebooks executed
# against the solutions) and serves it on http://127.0.0.1:$PORT/ (default 8000).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."  # the repo root, wherever the clone lives

bash scripts/setup.sh

source scripts/env.sh
PORT="${PORT:-8000}"

# 1. The tour: a short look at what tinyfw does.
if [ -f tinyfw/tour.py ]; then
  echo "start: running the tour (python -m tinyfw.tour)"
  .venv/bin/python -m tinyfw.tour
else
  echo "start: tour skipped, tinyfw/tour.py is not there yet"
fi

# 2. The site, with every notebook executed against the solutions.
echo "start: building the site into build/site"
TINYFW_IMPL=solutions .venv/bin/mkdocs build --strict -d build/site

# 3. Serve it with a plain static server until Ctrl-C.
echo "start: serving the site at http://127.0.0.1:$PORT/ (Ctrl-C stops)"
.venv/bin/python -m http.server "$PORT" --bind 127.0.0.1 --directory build/site
