"""The dtype-parameterised workgroup GEMM (gemm_wg_kernel) compiled by Intel's offline
compiler for pvc and dg2-g10: DPAS in the hot loop, SIMD = subgroup size, no spills,
and the GRF mode the target's rule picks (pvc: 128 GRFs, since a 16x32 i32/f32
accumulator is 32 of 128 registers; dg2-g10: 256 GRFs, ARC's build_options)."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.kernels.gemm_wg import gemm_wg_kernel
from xetile_dsl.targets import get_target
from xetile_dsl.tools import ocloc

NAME = "gemm_wg_kernel"
BK = {"f16": 32, "bf16": 32, "f32": 16, "i8": 64, "u8": 64}
CASES = [(t, dt) for t in ("pvc", "arc") for dt in BK if not (t == "arc" and dt == "f32")]


@pytest.mark.parametrize("target,dt", CASES)
def test_wg_gemm_isa(ocloc_path, target, dt):
    acc = "i32" if dt in ("i8", "u8") else "f32"
    sig = {"a": f"{dt}[:,:]", "b": f"{dt}[:,:]", "c": f"{acc}[:,:]", "K": "i32"}
    consts = {"BM": 64, "BN": 64, "BK": BK[dt], "SM": 4, "SN": 2, "PF": 2,
              "ACC": xt.int32 if acc == "i32" else xt.float32}
    kernel = xd.compile(gemm_wg_kernel, sig, consts, target=target)
    tgt = get_target(target)
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, NAME, expect_dpas=True, expect_block2d=tgt.has_2d_block_io,
                           expect_simd=tgt.subgroup_size) == []
    env = zebin.execution_env(NAME)
    assert env.get("spill_size", 0) == 0
    assert kernel.abi.workgroup_size == 8 * tgt.subgroup_size
    # GRF mode: pvc keeps the default 128 registers (a 16x32 accumulator is 2 KB of 8 KB);
    # dg2-g10 kernels are always built with 256 (Target.build_options)
    assert env["grf_count"] == (256 if target == "arc" else 128)
    assert kernel.abi.extra["build_options"] == tgt.build_options_for(False)
    loop = ocloc.hot_loop(kernel.asm["isa"])
    dpas = tgt.dpas_for(dt, dt)
    # one DPAS per (8-row, N-lane, K) block of the subgroup's 16x32 piece and BK
    want = (16 // dpas.m) * (32 // dpas.n) * (BK[dt] // dpas.k)
    assert ocloc.count(loop, ocloc.DPAS) >= want


@pytest.mark.parametrize("dt", ["f16", "i8"])
def test_wg_gemm_32x32_pieces_on_dg2_do_not_spill(ocloc_path, dt):
    """64x64 workgroup tiles with sg_layout [2, 2]: a 32x32 piece per subgroup on dg2-g10
    (8 lanes, 256 GRFs).  Loads sunk to their first DPAS keep one K block of operands live;
    before that these spilled 3200 (f16) and 9664 (int8) bytes."""
    acc = "i32" if dt == "i8" else "f32"
    sig = {"a": f"{dt}[:,:]", "b": f"{dt}[:,:]", "c": f"{acc}[:,:]", "K": "i32"}
    consts = {"BM": 64, "BN": 64, "BK": BK[dt], "SM": 2, "SN": 2, "PF": 2,
              "ACC": xt.int32 if acc == "i32" else xt.float32}
    kernel = xd.compile(gemm_wg_kernel, sig, consts, target="arc")
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, NAME, expect_dpas=True, expect_simd=8) == []
    env = zebin.execution_env(NAME)
    assert env["grf_count"] == 256 and env.get("spill_size", 0) == 0
    dpas = get_target("arc").dpas_for(dt, dt)
    want = (32 // dpas.m) * (32 // dpas.n) * (BK[dt] // dpas.k)
    assert ocloc.count(ocloc.hot_loop(kernel.asm["isa"]), ocloc.DPAS) >= want
