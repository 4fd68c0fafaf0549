"""Chained tile_mma on ARC (dg2-g10), read from Intel's offline compiler: the operand A of
the second product is re-laid out from the first product's 8x8 result blocks with lane
shuffles (lowering/rewrites/mma_relayout.py, codegen/emit/a_from_c.py) without spilling and without
SLM, and costs no more instructions than the SLM round trip it replaces.

Measured with the pinned IGC (tools-cache), BM x BN x BK = 16 x 32 x 32 (four 8x16 A
blocks): 4808 instructions in the whole kernel (4868 through SLM), 0 bytes of spill;
each A block takes 16 shuffles, one indirect register read each (2 per row: lane i's
columns 2i and 2i + 1 come from two lanes). Read from the listing, one shuffle is 5
instructions (address register reset and add, the indirect read, the shift choosing the
block's half, the half-word move) and packing a row's two blocks into the shuffled dword
3, so about 16 * 5 + 8 * 3 = 104 instructions per 8x16 A block.

A result feeding operand B on PVC (xe-hpc): each 16x16 B block is two 8x16 result
blocks stacked in every lane (VNNI pairs of consecutive rows), so no shuffle, no
indirect register read and no SLM: BM x BN x BK x BE = 32 x 32 x 32 x 16, 299
instructions in the whole kernel, 0 bytes of spill."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.tools import ocloc
from xetile_dsl.tools.isa import instructions

from e2e.chained_mma_kernels import chained_into_b_kernel, chained_kernel, chained_through_slm_kernel

SHAPE = {"BM": 16, "BN": 32, "BK": 32}
A_BLOCKS = SHAPE["BM"] // 8 * SHAPE["BN"] // 16
INDIRECT_READ = r"r\[a0\.\d+\]<1,0>"  # a per-lane indirect register read: a shuffle (or IGC's own moves)
SLM_ACCESS = r"\b(?:load|store)\.slm\b"
#: the measured whole-kernel instruction count (f16: 4808, bf16: 5160) plus 2%
MAX_INSTRUCTIONS = {"f16": 4904, "bf16": 5263}


def _sig(t: str) -> dict:
    return {"a": f"{t}[:,:]", "b": f"{t}[:,:]", "d": f"{t}[:,:]", "c": "f32[:,:]"}


@pytest.fixture(scope="module")
def through_slm():
    return xd.compile(chained_through_slm_kernel, _sig("f16"), SHAPE, target="arc")


@pytest.mark.parametrize("dtype,elem", [("f16", xt.float16), ("bf16", xt.bfloat16)])
def test_arc_chained_mma_shuffles_without_spill_or_slm(dtype, elem, through_slm, ocloc_path):
    compiled = xd.compile(chained_kernel, _sig(dtype), {**SHAPE, "T": elem}, target="arc")
    isa, zebin = compiled.asm["isa"], compiled.asm["zebin"]
    assert ocloc.check_isa(zebin, "chained_kernel", expect_dpas=True, expect_simd=8) == []  # no spill too
    assert zebin.execution_env("chained_kernel").get("spill_size", 0) == 0
    assert zebin.execution_env("chained_kernel").get("slm_size", 0) == 0 and ocloc.count(isa, SLM_ACCESS) == 0
    # the SLM version has the same loads and products; the difference is the shuffles
    slm_isa = through_slm.asm["isa"]
    assert ocloc.count(isa, INDIRECT_READ) - ocloc.count(slm_isa, INDIRECT_READ) == 16 * A_BLOCKS
    count = _count(isa)
    assert count <= MAX_INSTRUCTIONS[dtype]
    if dtype == "f16":
        assert count <= _count(slm_isa)  # 4808 <= 4868: no dearer than the SLM round trip


def _count(isa: str) -> int:
    return sum(1 for _ in instructions(isa))


#: the measured whole-kernel instruction count of the pvc B chain (299) plus 2%
MAX_INTO_B_INSTRUCTIONS = 305


def test_pvc_chained_mma_into_operand_b_moves_no_lanes(ocloc_path):
    sig = {"a": "f16[:,:]", "b": "f16[:,:]", "e": "f16[:,:]", "c": "f32[:,:]"}
    compiled = xd.compile(chained_into_b_kernel, sig, {"BM": 32, "BN": 32, "BK": 32, "BE": 16, "T": xt.float16},
                          target="pvc")
    isa, zebin = compiled.asm["isa"], compiled.asm["zebin"]
    assert ocloc.check_isa(zebin, "chained_into_b_kernel", expect_dpas=True, expect_simd=16) == []
    env = zebin.execution_env("chained_into_b_kernel")
    assert env.get("spill_size", 0) == 0 and env.get("slm_size", 0) == 0 and ocloc.count(isa, SLM_ACCESS) == 0
    assert "shuffle" not in compiled.asm["llvm"] and ocloc.count(isa, INDIRECT_READ) == 0
    assert _count(isa) <= MAX_INTO_B_INSTRUCTIONS
