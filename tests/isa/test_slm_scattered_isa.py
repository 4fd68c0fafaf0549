"""Scattered tiles over SLM become SLM messages in the machine code: one per-lane SLM
store per row of lanes for a scatter, hardware SLM atomics (IGC turns an add of 1 into
``atomic_iinc``) for atomic_rmw; no global-memory scatter, no spills."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
from xetile_dsl.tools import ocloc

from e2e.slm_scatter_kernels import slm_histogram_kernel, slm_permute_kernel

SIMD = {"pvc": 16, "arc": 8}
N = 32


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_scatter_into_slm_is_slm_stores(target, ocloc_path):
    # scatter lanes are bounds-checked (a per-lane guard around each store): on ARC's 8
    # lanes a 32 x 32 f16 scatter's 128 guarded stores spill 576 bytes, as any masked
    # scatter of that size does, so ARC's kernel scatters 16 x 16
    N = {"pvc": 32, "arc": 16}[target]
    sig = {"x": "f16[:,:]", "idx": "i32[:,:]", "y": "f16[:,:]"}
    kernel = xd.compile(slm_permute_kernel, sig, {"N": N}, target=target)
    assert ocloc.check_isa(kernel.asm["zebin"], "slm_permute_kernel", expect_dpas=False,
                           expect_simd=SIMD[target]) == []
    # N*N elements, one per lane per message: N*N / lanes SLM stores (the block store of
    # the result to global memory is separate and is not an SLM message)
    assert len(re.findall(r"store\.slm", kernel.asm["isa"])) == N * N // SIMD[target]


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_atomic_add_into_slm_is_slm_atomics(target, ocloc_path):
    sig = {"x": "i32[:,:]", "out": "i32[:,:]"}
    kernel = xd.compile(slm_histogram_kernel, sig, {"N": N, "BINS": 16}, target=target)
    isa = kernel.asm["isa"]
    assert ocloc.check_isa(kernel.asm["zebin"], "slm_histogram_kernel", expect_dpas=False,
                           expect_simd=SIMD[target]) == []
    assert len(re.findall(r"atomic_i\w+\.slm", isa)) == N * N // SIMD[target]
    assert not re.search(r"atomic_\w+\.ugm", isa)
