"""``NvKernel.report()`` (tools/sass.py): ptxas's resources and nvdisasm's loops of an
sm90 / sm80 kernel, as the Intel targets' ``report()`` gives their ISA's."""
from __future__ import annotations

import json
import re

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.ops.matmul import matmul_kernel
from xetile_dsl.tools import sass

from .test_nvptx_compile import ptxas_report
from .test_nvptx_tma import _nvdisasm

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "bias": "f32[:,:]", "c": "f16[:,:]", "K": "i32"}


def _consts(bm, bn, bk):
    return dict(TA=False, TB=False, HAS_BIAS=False, ACT=0, ACC=xt.float32, OUT=xt.float16, BM=bm, BN=bn, BK=bk)


def test_sm90_gemm_report(tmp_path):
    """The 128x256x64 wgmma GEMM: ptxas's registers and no spill; the K loop (the
    innermost one holding HGMMA) issues BK / 16 = 4 of them a trip."""
    _nvdisasm()
    k = xd.compile(matmul_kernel, SIG, _consts(128, 256, 64), target="sm90")
    r = k.report()
    used = int(re.search(r"Used (\d+) registers", ptxas_report(k.ptx, k.ptx_arch, tmp_path)).group(1))
    assert (r.registers, r.spill_stores, r.spill_loads, r.stack) == (used, 0, 0, 0)
    assert r.arch == "sm_90a" and r.threads == 256 and r.dynamic_shared == k.smem_bytes > 0
    assert r.loop_with("HGMMA").counts["HGMMA"] == 4
    assert f"{used} registers" in str(r) and "HGMMA 4" in str(r)
    assert json.loads(r.to_json())["registers"] == used


def test_sm80_gemm_report():
    """mma.sync: the K loop's HMMA, one m16n8k16 a 16 x 8 block and 16-deep step of a
    warp's 64 x 32 part of a 128 x 128 x 32 tile over 8 warps: 4 x 4 x 2 = 32."""
    _nvdisasm()
    k = xd.compile(matmul_kernel, SIG, _consts(128, 128, 32), target="sm80", num_warps=8)
    r = k.report()
    assert r.arch == "sm_80" and r.spill_stores == 0 and r.loop_with("HMMA").counts["HMMA"] == 32


def test_loops_count_their_own_instructions():
    text = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_0:
        /*0010*/                   HMMA.16816.F32 R4, R8, R12, R4 ;
.L_x_1:
        /*0020*/                   LDG.E R2, desc[UR4][R6.64] ;
        /*0030*/              @P0 BRA `(.L_x_1) ;
        /*0040*/                   IADD3 R0, R0, 0x1, RZ ;
        /*0050*/              @!P1 BRA `(.L_x_0) ;
        /*0060*/                   EXIT ;
"""
    outer, inner = sass.loops(text)
    assert (outer.start, outer.end, outer.depth) == (1, 5, 1) and (inner.start, inner.end, inner.depth) == (2, 3, 2)
    assert outer.counts == {"HMMA": 1, "IADD3": 1, "BRA": 1} and inner.counts == {"LDG": 1, "BRA": 1}
