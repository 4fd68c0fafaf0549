"""Small-M GEMMs on PVC (the goals: M = 16 <= 45 and M = 64 <= 40 hot-loop
instructions per K step, 0 spill; Triton-XPU emits 45 and 36).

The kernel and workgroup shapes are benchmarks/gemm_isa.py's: ``gemm_wg_kernel`` with a
tile of min(256, M) rows by 256 columns, [rows / 32 or 1, 16] subgroups, BK = 32, N = K
= 4096 (K specialised as divisible by 16). Static counts under the pinned IGC are
deterministic, so the bounds are asserted (per K step: M = 16 runs two per trip,
tests/isa/test_rotate_loads_isa.py); the measured numbers are printed."""
from __future__ import annotations

import warnings

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.frontend.argspec import ArgSpec
from xetile_dsl.kernels.gemm_wg import gemm_wg_kernel

#: M -> (tile rows, SM, SN, the bound on hot-loop instructions)
SHAPES = {16: (16, 1, 16, 45), 64: (64, 2, 16, 40)}


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("m", sorted(SHAPES))
def test_small_m_hot_loop_within_the_goal(m, dtype, ocloc_path):
    rows, sm, sn, bound = SHAPES[m]
    sig = {"a": f"{dtype}[:,:]", "b": f"{dtype}[:,:]", "c": "f32[:,:]", "K": ArgSpec("scalar", "i32", spec="d16")}
    consts = {"BM": rows, "BN": 256, "BK": 32, "SM": sm, "SN": sn, "PF": 3, "ACC": xt.float32}
    with warnings.catch_warnings():   # gemm_wg's prefetch maps are one message each: no re-plan note
        warnings.simplefilter("error")
        report = xd.compile(gemm_wg_kernel, sig, consts, target="pvc").report()
    hot = report.hot
    print(f"pvc {dtype} M={m} [{sm},{sn}]: {hot.instructions} instructions, {hot.dpas} dpas in "
          f"{hot.dpas_runs} runs, {hot.counts['load2d']} block loads, spill {report.spill_bytes} B")
    per_step = (rows // sm // 8) * (256 // sn // 16) * (32 // 16)   # dpas.8x8: 8 rows, 16 columns, K 16
    steps = hot.dpas // per_step    # xegpu-rotate-loads runs two K steps per trip where they fit (M = 16)
    assert hot.dpas == steps * per_step and steps in (1, 2)
    assert hot.instructions <= bound * steps
    assert hot.counts["gather"] == hot.counts["scatter"] == hot.counts["slm"] == 0
    assert report.spill_bytes == 0
