#!/usr/bin/env bash
# The README's test command N times in a row (default 3) with a CPU-bound load of two processes beside it
# (stress-ng --cpu 2, or two Python busy loops where stress-ng is not installed), as CI on a busy machine runs it.
# Stops at the first failing run; prints one line per run (exit code, wall time, load average) and exits with the
# first failure's code. Run it from the repository (its environment installed, as the README's test command does).
#
#   tools/under_load.sh          # three runs
#   tools/under_load.sh 1        # one run
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-3}"
case "$runs" in
  ''|*[!0-9]*) echo "error: tools/under_load.sh: RUNS must be a whole number from 1 to 20, got '$runs'" >&2; exit 2 ;;
esac
if [ "$runs" -lt 1 ] || [ "$runs" -gt 20 ]; then
  echo "error: tools/under_load.sh: RUNS must be a whole number from 1 to 20, got $runs" >&2
  exit 2
fi

if command -v stress-ng >/dev/null 2>&1; then
  stress-ng --cpu 2 --quiet &
else
  python -c 'import multiprocessing as m
def spin():
    while True: pass
ps = [m.Process(target=spin) for _ in range(2)]
[p.start() for p in ps]; [p.join() for p in ps]' &
fi
load=$!
trap 'pkill -P $load 2>/dev/null; kill $load 2>/dev/null; true' EXIT

for i in $(seq 1 "$runs"); do
  started=$(date +%s)
  set +e
  pip install -q -e '.[test]' && ruff check && python -m pytest -q
  rc=$?
  set -e
  took=$(( $(date +%s) - started ))
  echo "under load: run $i of $runs: exit code $rc after $((took / 60)) min $((took % 60)) s (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
  if [ "$rc" != 0 ]; then
    exit "$rc"
  fi
done
