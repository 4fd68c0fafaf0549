"""The RFC Appendix 2.1 workgroup GEMM compiled for pvc, bmg and lnl by Intel's offline
compiler: DPAS and 2D-block loads in the hot loop, cooperative 2D-block prefetches, no
spills.  Each subgroup's 32x64 f32 accumulator is 128 of the 128 default registers, so
the kernel is built in the 256-GRF mode (``-ze-opt-large-register-file``)."""
from __future__ import annotations

import re
import warnings

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import PrefetchPlanWarning
from xetile_dsl.kernels.gemm_wg import gemm_prefetch_kernel, gemm_wg_kernel
from xetile_dsl.tools import ocloc

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
NAME = "gemm_prefetch_kernel"


#: hot-loop instructions per K step of the 2.1 GEMM (ocloc 26.27): 176 on pvc with one
#: message per block, 70 coalesced, 68 with a 32-bit loop counter (65 -> 60 on bmg/lnl),
#: 53 with the prefetch payloads made before the loop (48 on bmg/lnl; prefetch_payloads.py)
HOT_LOOP_LIMIT = {"pvc": 53, "bmg": 48, "lnl": 48}


@pytest.mark.parametrize("target,dtype", [("pvc", "f16"), ("pvc", "bf16"), ("bmg", "f16"), ("bmg", "bf16"),
                                          ("lnl", "f16")])
def test_appendix_2_1_gemm_isa(target, dtype, ocloc_path):
    sig = {k: v.replace("f16", dtype) for k, v in SIG.items()}
    kernel = xd.compile(gemm_prefetch_kernel, sig, {"BM": 256, "BN": 256, "BK": 32, "PF": 3}, target=target)
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, NAME, expect_dpas=True, expect_block2d=True, expect_simd=16) == []
    env = zebin.execution_env(NAME)
    assert env["grf_count"] == 256 and env.get("spill_size", 0) == 0
    assert kernel.abi.extra["build_options"] == "-ze-opt-large-register-file"
    assert kernel.asm["xegpu"].count("scf.for") == 1  # 8 + 3 KiB fit the budget: not split
    loop = ocloc.hot_loop(kernel.asm["isa"])
    # per subgroup and K step: (32/8) x (64/16) x (32/16) = 32 DPAS
    assert ocloc.count(loop, ocloc.DPAS) == 32
    sends = [ln for ln in loop.splitlines() if "load_block2d" in ln]
    loads = [ln for ln in sends if ln.split()[2] != "null"]
    prefetches = [ln for ln in sends if ln.split()[2] == "null"]  # no destination register
    # coalesced messages (lowering/rewrites/block_messages.py): A's 32x32 piece is one 32-row read
    # of two 16-wide blocks, B's 32x64 two 32-row VNNI reads of two blocks; the 8x32
    # prefetch slices one message each (one per 8x16 block before: 16 loads, 4 prefetches)
    assert len(loads) == 3 and sum(".d16v." in ln for ln in loads) == 2
    assert len(prefetches) == 2
    assert dpas_runs(loop) == [32]  # every load of the K step before its DPAS (10 runs before)
    print(f"RFC 2.1 {dtype} {target}: {len(instructions(loop))} hot-loop instructions")
    assert len(instructions(loop)) <= HOT_LOOP_LIMIT[target]


@pytest.mark.parametrize("target", ["bmg", "lnl"])
def test_128x256_tile_isa(target, ocloc_path):
    """A 128x256 workgroup tile of [4, 4] subgroups (32x64 each): the Xe2 goal of issue
    12, 0 spill, 32 dpas in one run per K step: 58 instructions, 48 with the prefetch
    payloads made before the loop."""
    consts = {"BM": 128, "BN": 256, "BK": 32, "SM": 4, "SN": 4, "PF": 3, "ACC": xt.float32}
    kernel = xd.compile(gemm_wg_kernel, SIG, consts, target=target)
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, "gemm_wg_kernel", expect_dpas=True, expect_block2d=True, expect_simd=16) == []
    assert zebin.execution_env("gemm_wg_kernel").get("spill_size", 0) == 0
    loop = ocloc.hot_loop(kernel.asm["isa"])
    print(f"128x256 f16 {target}: {len(instructions(loop))} hot-loop instructions")
    assert dpas_runs(loop) == [32] and len(instructions(loop)) <= 48


def test_derived_maps_gemm_isa_pvc(ocloc_path):
    """gemm_wg_kernel at 256x256x32 with [8, 4] subgroups: a B prefetch map [32, 1] x
    [1, 256] gave every subgroup eight one-row messages (337 hot-loop instructions, 18
    prefetches); as [4, 8] x [8, 32] (written so in the kernel, what
    lowering/analysis/prefetch_plan.py would choose) it is the RFC 2.1 loop: 3 loads, 2
    prefetches, one run of 32 dpas (70 -> 68 -> 53 instructions), and compiles without a note."""
    consts = {"BM": 256, "BN": 256, "BK": 32, "SM": 8, "SN": 4, "PF": 3, "ACC": xt.float32}
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrefetchPlanWarning)
        kernel = xd.compile(gemm_wg_kernel, SIG, consts, target="pvc")
    zebin = kernel.asm["zebin"]
    assert zebin.execution_env("gemm_wg_kernel").get("spill_size", 0) == 0
    loop = ocloc.hot_loop(kernel.asm["isa"])
    sends = [ln for ln in loop.splitlines() if "load_block2d" in ln]
    assert sum(ln.split()[2] != "null" for ln in sends) == 3
    assert sum(ln.split()[2] == "null" for ln in sends) == 2
    print(f"gemm_wg 256x256 f16 pvc: {len(instructions(loop))} hot-loop instructions")
    assert dpas_runs(loop) == [32] and len(instructions(loop)) <= 53


def instructions(listing: str) -> list[str]:
    """Instruction lines of an IGA listing (no labels, blanks, comments or padding)."""
    out = []
    for ln in listing.splitlines():
        s = ln.strip()
        if s and not s.startswith("//") and s != "illegal" and not re.match(r"^[A-Za-z_.$][\w.$]*:$", s):
            out.append(s)
    return out


def dpas_runs(listing: str) -> list[int]:
    """Lengths of the maximal runs of back-to-back dpas instructions."""
    runs, run = [], 0
    for ln in instructions(listing) + [""]:
        if re.match(r"(\([^)]*\)\s*)?dpasw?\b", ln):
            run += 1
        elif run:
            runs.append(run)
            run = 0
    return runs


def test_subgroup_gemm_stays_in_the_default_grf_mode(ocloc_path):
    from xetile_dsl.kernels.matmul import matmul_kernel

    kernel = xd.compile(matmul_kernel, SIG, {"BM": 32, "BN": 32, "BK": 32}, target="pvc")
    assert kernel.asm["zebin"].execution_env("matmul_kernel")["grf_count"] == 128
    assert kernel.abi.workgroup_size == 16
