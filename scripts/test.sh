#!/usr/bin/env bash
# Install the test dependencies (pip; plus, where apt-get works, Intel's current offline
# compiler and iga64 -- see docs/tools.md) and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e ".[test]"
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  bash scripts/install-test-tools.sh
fi
# One pytest process per stage directory: LLVM's SPIR-V backend and the OpenCL CPU runtime
# accumulate per-process state, and a crash in one stage must not hide the others' results.
status=0
for dir in tests/*/; do
  compgen -G "${dir}test_*.py" >/dev/null || continue   # e.g. __pycache__
  python -m pytest "$dir" -q -p no:cacheprovider "$@" || status=$?
done
exit "$status"
