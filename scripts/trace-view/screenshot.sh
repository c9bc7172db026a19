#!/usr/bin/env bash
# Screenshot an outrun trace in Chromium's trace viewer (see screenshot.js).
#   scripts/trace-view/screenshot.sh RUN_DIR/trace.json OUT.png
# Needs Debian's chromium (apt-get install chromium) and Node.js 20 or newer.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 TRACE_JSON OUT_PNG" >&2; exit 2; }
command -v chromium >/dev/null || { echo "error: chromium not found (apt-get install chromium)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
port=$((20000 + RANDOM % 20000))
profile=$(mktemp -d)
chromium --headless --no-sandbox --user-data-dir="$profile" --remote-debugging-port="$port" about:blank \
  >"$profile/chromium.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$profile"' EXIT
for _ in $(seq 50); do curl -s "http://127.0.0.1:$port/json/version" >/dev/null && break; sleep 0.2; done
node --experimental-websocket "$here/screenshot.js" "$port" "$1" "$2"
