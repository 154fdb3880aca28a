#!/bin/bash
# analyse after a settings change, on fresh copies of one SQLite store: an older checkout with
# --workers 1, this checkout with --workers 1 and 2, alternated; /usr/bin/time per run (its CPU
# includes the workers the command waited for).
#
#   bench/analyse_ab.sh STORE.db BASE_CHECKOUT [ROUNDS]
set -euo pipefail
store=$1; base=$2; rounds=${3:-2}
here=$(cd "$(dirname "$0")/.." && pwd)
copy=$(mktemp -d)/copy.db
trap 'rm -rf "$(dirname "$copy")"' EXIT
for r in $(seq 1 "$rounds"); do
  for side in "$base:1" "$here:1" "$here:2"; do
    dir=${side%:*}; w=${side##*:}
    cp "$store" "$copy"; rm -f "$copy-wal" "$copy-shm"
    (cd "$dir" && /usr/bin/time -f "round $r $(basename "$dir") --workers $w: %e s wall, %U s user + %S s system, %M KB peak RSS" \
      python3 -m clawviz --db "sqlite:///$copy" analyse --workers "$w" --set reward_threshold=0.7 >/dev/null)
  done
done
