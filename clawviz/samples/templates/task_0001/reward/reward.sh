#!/bin/sh
# Runs after the agent stops. Usage: reward.sh [WORKSPACE] (default: the current directory).
# check.py prints a JSON object of named sub-scores; the reward is their mean (last line).
HERE=$(cd "$(dirname "$0")" && pwd)
python3 "$HERE/check.py" "${1:-$PWD}" | python3 -c 'import json, sys; d = json.load(sys.stdin); print(round(sum(d.values()) / len(d), 6) if d else 0.0)'
