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
# Two lanes use both cores: the end-to-end stage (the longest) beside all the others, one
# after another. The other lane's output streams; the end-to-end log follows it.
stages=()
for dir in tests/*/; do
  compgen -G "${dir}test_*.py" >/dev/null && stages+=("$dir")   # skips e.g. __pycache__
done
long=tests/e2e/
e2e_log=$(mktemp)
( python -m pytest "$long" -q -p no:cacheprovider "$@" >"$e2e_log" 2>&1 ) &
e2e_pid=$!
status=0
for dir in "${stages[@]}"; do
  [ "$dir" = "$long" ] && continue
  python -m pytest "$dir" -q -p no:cacheprovider "$@" || status=$?
done
wait "$e2e_pid" || status=$?
echo "== $long"
cat "$e2e_log"
rm -f "$e2e_log"
exit "$status"
