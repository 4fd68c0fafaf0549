"""Sum up a ``pytest --build-log FILE`` log: builds and build seconds per test file and
per test, and SPIR-V programs built more than once (the same hash and options).

    python scripts/build_log_summary.py FILE [--top N]
"""
from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log")
    parser.add_argument("--top", type=int, default=15)
    opts = parser.parse_args()
    with open(opts.log, encoding="utf-8") as log:
        records = [json.loads(line) for line in log if line.strip()]
    per_file, per_test = defaultdict(float), defaultdict(float)
    builds = Counter()
    for r in records:
        per_file[r["test"].split("::")[0]] += r["seconds"]
        per_test[r["test"]] += r["seconds"]
        builds[(r["spirv_sha256"], r["options"])] += 1
    print(f"{len(records)} builds, {sum(r['seconds'] for r in records):.0f} s")
    for title, table in (("per file", per_file), ("per test", per_test)):
        print(f"-- build seconds {title}")
        for name, seconds in sorted(table.items(), key=lambda kv: -kv[1])[:opts.top]:
            print(f"{seconds:8.1f}  {name}")
    repeated = {key: n for key, n in builds.items() if n > 1}
    print(f"-- programs built more than once: {len(repeated)}")
    for (sha, options), n in repeated.items():
        names = sorted({r["test"] for r in records if r["spirv_sha256"] == sha})
        print(f"{n}x {sha} {options!r}: {', '.join(names[:4])}")


if __name__ == "__main__":
    main()
