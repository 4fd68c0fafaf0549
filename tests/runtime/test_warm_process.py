"""A new process whose kernel is in the disk cache goes source -> cache key -> program
binary: it compiles nothing, builds no program from SPIR-V, and loads neither the
compiler's stages (xDSL dialects, frontend, lowering, codegen, LLVM) nor the package
metadata machinery that asking xDSL for its version would load -- the loads that made a
warm first launch cost most of a second.  Asserted by counters and loaded modules, not by
timing (timings are benchmarks/latency.py's)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import xetile_dsl as xd
import xetile_dsl.language as xt

HERE = Path(__file__).parent
ROOT = HERE.parent.parent

#: modules only a compile needs; a warm process must not load any of them
COMPILE_ONLY = ("xdsl.dialects", "xdsl.irdl", "xetile_dsl.frontend.build", "xetile_dsl.dialects",
                "xetile_dsl.lowering", "xetile_dsl.codegen", "xetile_dsl.stage_log", "llvmlite.binding",
                # SPIR-V validation: not needed when the program binary is loaded instead
                "xetile_dsl.tools.spirv_tools",
                # the target tables (a launch reads targets/launch_facts.py)
                "xetile_dsl.targets.target")

#: modules only a GPU device needs (which target a GPU is); a launch on the CPU device must
#: not load them
GPU_ONLY = ("xetile_dsl.targets.pci_ids",)


@xd.jit
def doubled_plus_one(x, y, BM: xt.constexpr, BN: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [xt.program_id(0) * BM, 0], [BM, BN]))
    xt.store_tile(v * 2.0 + 1.0, xt.init_tile(y, [xt.program_id(0) * BM, 0], [BM, BN]))


_SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import xdsl
    import xetile_dsl as xd
    from test_warm_process import COMPILE_ONLY, GPU_ONLY, doubled_plus_one
    x = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
    y = np.zeros_like(x)
    doubled_plus_one.on("cpu")[(2,)](x, y, BM=8, BN=16)
    from xetile_dsl import compiler
    from xetile_dsl.runtime import program_cache
    print(json.dumps({"exact": bool(np.array_equal(y, x * 2 + 1)), "compiles": compiler.stats["compiles"],
                      "programs": program_cache.stats,
                      "compile_modules": sorted(m for m in sys.modules if m.startswith(COMPILE_ONLY)),
                      "xdsl_metadata_read": xdsl.__version__._version is not None,
                      "device_kind": xd.runtime.devices.get_device().kind,
                      "gpu_only_modules": sorted(m for m in sys.modules if m in GPU_ONLY)}))
""")


def _run(cache: Path) -> dict:
    env = dict(os.environ, XETILE_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("XETILE_PROGRAM_CACHE", None)
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(HERE)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_warm_process_loads_the_kernel_without_the_compiler(tmp_path):
    cold, warm = _run(tmp_path), _run(tmp_path)
    assert cold["exact"] and warm["exact"]
    assert cold["compiles"] == 1 and cold["programs"]["built"] == 1
    assert cold["compile_modules"]                      # the check sees a compile's modules
    assert warm["compiles"] == 0
    assert warm["programs"] == {"loaded": 1, "built": 0, "refused": 0}
    assert warm["compile_modules"] == []
    assert not warm["xdsl_metadata_read"]
    if warm["device_kind"] == "cpu":
        assert warm["gpu_only_modules"] == []
