#!/usr/bin/env bash
# Install the test dependencies (pip; plus, where apt-get works, Intel's current offline
# compiler and iga64 -- see docs/tools.md) and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e ".[test]"
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  bash scripts/install-test-tools.sh
fi
# One pytest process per job (a stage folder, the end-to-end stage in four), two at a time
# on two cores, longest first: see scripts/run_stages.py.
exec python scripts/run_stages.py "$@"
