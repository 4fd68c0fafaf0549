"""Scalars read from device arrays, compiled by Intel's offline compiler for PVC and ARC:
no spills and no calls, and the element read is one uniform message (a single-lane
``(W) ... (1|M0)`` load of one element), not a per-lane gather of the same address."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
from kernels.element_reads import gather_rows, grouped_from_table
from xetile_dsl.tools import ocloc

SIMD = {"pvc": 16, "arc": 8}
#: a one-lane (SIMT-uniform) load of one 32-bit element: LSC's transposed d32x1t form
UNIFORM_ELEMENT_LOAD = r"\(W\)\s+send\.ugm \(1\|M0\).*load\.ugm\.d32x1t"
KERNELS = {
    "gather": (gather_rows, {"table": "i32[:,:]", "src": "f32[:,:]", "out": "f32[:,:]"}, {"W": 16}, False, 1),
    "grouped_gemm": (grouped_from_table, {"meta": "i32[:,:]", "a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]"},
                     {"BM": 16, "BN": 16, "BK": 16}, True, 5),
}


@pytest.mark.parametrize("target", ["pvc", "arc"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_element_reads_are_uniform_loads(name, target, ocloc_path):
    fn, sig, consts, dpas, reads = KERNELS[name]
    kernel = xd.compile(fn, sig, consts, target=target)
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, kernel.abi.kernel_name, expect_dpas=dpas, expect_simd=SIMD[target]) == []
    isa = kernel.asm["isa"]
    # every table element read is one single-lane message (the GPU compiler may merge neighbours)
    assert 1 <= len(re.findall(UNIFORM_ELEMENT_LOAD, isa)) <= reads, isa
