#!/bin/sh
# Record Claude Code at a pinned version against the scripted server, offline.
#   tests/harness/record_claude_code.sh 2.0.77 [SCENARIO ...]
# See tests/harness/record_claude_code.py (npm install first, then everything in a network
# namespace with only loopback; all processes stopped by PID).
set -eu
cd "$(dirname "$0")/../.."
version="$1"
shift
exec python3 -m tests.harness.record_claude_code --version "$version" "$@"
