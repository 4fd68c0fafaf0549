"""Scattered tiles compiled by Intel's offline compiler: gathers/scatters become plain
per-lane messages, integer atomics and the f32 add hardware atomic messages, the other
float atomics a compare-exchange loop (atomic_icas); no calls left, no spills."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
from kernels.scattered import atomic_accumulate_kernel, gather_kernel, scatter_kernel
from xetile_dsl.tools import ocloc

SIMD = {"pvc": 16, "arc": 8}


@pytest.mark.parametrize("target", ["pvc", "arc"])
@pytest.mark.parametrize("dtype,kind,isa_op", [("i32", "add", r"atomic_iadd"), ("i32", "max", r"atomic_smax"),
                                               ("f32", "add", r"atomic_fadd"), ("f32", "max", r"atomic_icas")])
def test_atomics_are_atomic_messages(target, dtype, kind, isa_op, ocloc_path):
    sig = {"x": f"{dtype}[:,:]", "idx": "i32[:,:]", "out": f"{dtype}[:,:]"}
    kernel = xd.compile(atomic_accumulate_kernel, sig, {"KIND": kind, "N": 32}, target=target)
    name = "atomic_accumulate_kernel"
    assert ocloc.check_isa(kernel.asm["zebin"], name, expect_dpas=False, expect_simd=SIMD[target]) == []
    assert re.search(isa_op, kernel.asm["isa"]), f"no {isa_op} message"


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_gather_and_scatter_compile(target, ocloc_path):
    for kernel, sig, consts in (
        (gather_kernel, {"src": "f32[:,:]", "idx": "i32[:,:]", "out": "f32[:,:]", "n": "i32"}, {"N": 32}),
        (scatter_kernel, {"src": "f32[:,:]", "idx": "i32[:,:]", "out": "f32[:,:]"}, {"N": 32}),
    ):
        compiled = xd.compile(kernel, sig, consts, target=target)
        name = "gather_kernel" if kernel is gather_kernel else "scatter_kernel"
        assert ocloc.check_isa(compiled.asm["zebin"], name, expect_dpas=False, expect_simd=SIMD[target]) == []


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_block_tile_atomic_add_is_atomic_iadd(target, ocloc_path):
    from kernels.scattered import block_partial_sums_kernel

    sig = {"x": "i32[:,:]", "out": "i32[:,:]"}
    kernel = xd.compile(block_partial_sums_kernel, sig, {"KIND": "add", "SLAB": 64, "R": 2, "BM": 16, "BN": 16},
                        target=target)
    name = "block_partial_sums_kernel"
    assert ocloc.check_isa(kernel.asm["zebin"], name, expect_dpas=False, expect_simd=SIMD[target]) == []
    # 16 rows of one element per lane: 16 atomic messages on 16 lanes, 32 on 8 lanes
    assert ocloc.count(kernel.asm["isa"], r"atomic_iadd") >= 16 * 16 // SIMD[target]
