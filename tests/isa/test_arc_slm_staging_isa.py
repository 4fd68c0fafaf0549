"""ARC (dg2-g10) SLM staging: an SLM block that spans its buffer's rows is read
with whole-block subgroup block messages on local memory (codegen/emit/slm.py), not one
per-lane load per row and lane unit.  Kernel: kernels/gemm_slm_arc.gemm_slm_a_kernel
(128x128 over [4, 4], A through a 128x16 SLM buffer).  Static counts under the pinned IGC."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
from xetile_dsl.kernels.gemm_slm_arc import gemm_slm_a_kernel
from xetile_dsl.tools import ocloc
from xetile_dsl.tools.isa import instructions

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
NAME = "gemm_slm_a_kernel"


@pytest.fixture(scope="module")
def kernel():
    return xd.compile(gemm_slm_a_kernel, SIG, {"BM": 128, "BN": 128, "SM": 4, "SN": 4}, target="arc")


def _sends(loop: str) -> list[str]:
    return [ins.message for ins in instructions(loop) if ins.opcode.startswith("send")]


def test_slm_a_operands_are_block_reads(kernel, ocloc_path):
    """Each subgroup's 32x16 A piece is four 8x16 blocks of 256 contiguous bytes in the
    16-wide buffer: block messages only (measured 8), no per-lane SLM loads (47 before:
    ``load.slm.d16u32`` / ``load.slm.d32``); one K loop, 16 DPAS, 0 spill."""
    isa = kernel.asm["isa"]
    assert kernel.asm["zebin"].execution_env(NAME).get("spill_size", 0) == 0
    (loop,) = [lp for lp in ocloc.loops(isa) if ocloc.count(lp, ocloc.DPAS)]
    sends = _sends(loop)
    slm_loads = [s for s in sends if s.startswith("load.slm")]
    dpas = ocloc.count(loop, ocloc.DPAS)
    print(f"arc gemm_slm_a 128x128 [4,4]: {len(sends)} sends / {dpas} dpas, SLM loads {len(slm_loads)}: "
          f"{sorted(set(slm_loads))}")
    assert dpas >= 16
    assert slm_loads and all(re.match(r"load\.slm\.d32x\d+t\b", s) for s in slm_loads)
    assert len(slm_loads) <= 8
