#!/usr/bin/env bash
# The tool installer ships inside the package (xetile_dsl/tools/install-test-tools.sh, also
# run by `python -m xetile_dsl install-tools`); this keeps the checkout's old path working.
exec bash "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/xetile_dsl/tools/install-test-tools.sh" "$@"
