"""RFC Appendix 2.2 and 2.3 compiled for pvc, bmg and lnl by Intel's offline compiler: DPAS in the hot
loop, no spills, 256-GRF mode (each subgroup's 32x64 f32 accumulator is 128 registers).
Both read B with transposed 2D blocks (``d32t``) and touch SLM only for the 256x4
partial row sums: 2.3's maps give each subgroup its own BT piece, and 2.2's transpose of
the loaded BT is folded into the loads too (the data is in global memory; it used to be
exchanged through SLM with two barriers per K step)."""
from __future__ import annotations

import re

import xetile_dsl as xd
import pytest

from xetile_dsl.kernels import gemm_bt_reduce as G
from xetile_dsl.tools import ocloc

SIG = {"a": "f16[:,:]", "bt": "f16[:,:]", "bcast": "f32[:,:]", "c": "f32[:,:]", "res": "f32[:,:]", "K": "i32"}
NAME = "gemm_bt_bcast_reduce_kernel"
PARTIALS = 256 * 4 * 4  # 256 rows x 4 subgroup columns of f32 partial sums


TARGETS = ["pvc", "bmg", "lnl"]


def _compiled(mp_bt, target):
    kernel = xd.compile(G.gemm_bt_bcast_reduce_kernel, SIG, {"MP_BT_LOAD": mp_bt, "PF": 3}, target=target)
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, NAME, expect_dpas=True, expect_block2d=True, expect_simd=16) == []
    env = zebin.execution_env(NAME)
    assert env["grf_count"] == 256 and env.get("spill_size", 0) == 0
    assert kernel.abi.extra["build_options"] == "-ze-opt-large-register-file"
    loop = ocloc.hot_loop(kernel.asm["isa"])
    assert ocloc.count(loop, ocloc.DPAS) == 32  # (32/8) x (64/16) x (32/16) per subgroup and K step
    return kernel.asm["isa"], env, loop


@pytest.mark.parametrize("target", TARGETS)
def test_appendix_2_2_transposes_in_the_load(ocloc_path, target):
    """Before: a 256x32 BT slice in SLM (16 KiB), stores, loads and 2 barriers per K step."""
    isa, env, loop = _compiled(G.MP_BT, target)
    assert env["slm_size"] == PARTIALS
    assert len(re.findall(r"load_block2d\S*\.d32t", loop)) == 8  # 2x4 16x16 B blocks, transposed reads
    assert not re.search(r"\b(load|store)\.slm\b", loop) and ocloc.count(loop, r"\bsync\.bar\b") == 0


@pytest.mark.parametrize("target", TARGETS)
def test_appendix_2_3_transposes_in_the_load(ocloc_path, target):
    isa, env, loop = _compiled(G.MP_BT_23, target)
    assert env["slm_size"] == PARTIALS
    assert len(re.findall(r"load_block2d\S*\.d32t", loop)) == 8  # 2x4 16x16 B blocks, transposed reads
    assert not re.search(r"\b(load|store)\.slm\b", loop) and ocloc.count(loop, r"\bsync\.bar\b") == 0
