"""Chunked scattered accesses compiled by ocloc: each lane's ``chunk_size`` consecutive
elements are one LSC message with a vector size (``load.ugm.d32xN`` / ``store.ugm.d32xN``,
N = chunk bytes / 4), no spills, no per-element gathers."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
from kernels.scatter_chunk import chunk_gather_scatter
from xetile_dsl.tools import ocloc

SIMD = {"pvc": 16, "arc": 8}


@pytest.mark.parametrize("target,elem,chunk", [("pvc", "f32", 8), ("pvc", "f16", 8), ("pvc", "f32", 2),
                                               ("arc", "f32", 4)])
def test_each_lane_is_one_vector_lsc_message(target, elem, chunk, ocloc_path):
    sg = SIMD[target]
    mask = [lane % 3 != 0 for lane in range(sg)]
    kernel = xd.compile_mlir(chunk_gather_scatter(elem, chunk, sg, range(sg), mask, reversed(range(sg)), mask),
                             target)
    isa, zebin = kernel.asm["isa"], kernel.asm["zebin"]
    words = chunk * (32 if elem == "f32" else 16) // 32
    vec = rf"d32x{words}\b" if words > 1 else r"d32\b"
    assert ocloc.count(isa, rf"load\.ugm\.{vec}") == 1
    assert ocloc.count(isa, rf"store\.ugm\.{vec}") == 1
    assert ocloc.check_isa(zebin, kernel.abi.kernel_name, expect_dpas=False, expect_simd=sg) == []
    assert zebin.execution_env(kernel.abi.kernel_name)["grf_count"] == (128 if target == "pvc" else 256)
