"""Hopper's wgmma pieces (codegen/nvptx/wgmma.py) without a GPU: the descriptor bit
fields, the 128-byte swizzle against the bank model, the fragment positions of the
accumulators, and the one-warpgroup kernel of codegen/nvptx/wgmma_probe.py (C[64, N] =
A[64, 64] . Bt[N, 64]^T, both K-major in swizzled shared memory, 4 K steps of m64nNk16)
built from them, lowered by llvmlite for sm_90a and assembled by ptxas: 4 wgmma.mma_async, no spill, no local memory.
benchmarks/wgmma_probe.py runs the same kernel on an H200 against torch."""
from __future__ import annotations

import re

import pytest

from xetile_dsl.codegen.nvptx.wgmma import acc_position, descriptor_bits, swizzle128
from xetile_dsl.codegen.nvptx.wgmma_probe import probe_ptx
from xetile_dsl.targets.nvidia import SM90

from .test_nvptx_compile import ptxas_report

K = 64          # one 128-byte swizzle row of f16


def test_descriptor_fields():
    """PTX ISA matrix-descriptor format: addr>>4 at bit 0, LBO>>4 at 16, SBO>>4 at 32,
    the 128-byte swizzle (1) at bits 62-63."""
    bits = descriptor_bits(0x1230, 16, 1024, 128)
    assert bits & 0x3FFF == 0x123 and (bits >> 16) & 0x3FFF == 1 and (bits >> 32) & 0x3FFF == 64
    assert bits >> 62 == 1 and descriptor_bits(0, 0, 0, 0) == 0


def test_swizzle_is_a_permutation_without_bank_conflicts():
    """An 8-row atom of 128-byte rows maps onto itself; the 8 rows of one 16-byte column
    (an 8x8 core matrix) land in 8 different 16-byte bank groups."""
    groups = SM90.smem_banks * SM90.smem_bank_bytes // 16
    offsets = {swizzle128(r, c) for r in range(8) for c in range(128)}
    assert offsets == set(range(1024))
    for col in range(0, 128, 16):
        assert len({(swizzle128(r, col) // 16) % groups for r in range(8)}) == 8


def test_accumulators_cover_the_block():
    """The 128 threads' n/2 slots hold each of the 64 x n elements once."""
    n = 64
    seen = [acc_position(t % 32, t // 32, s) for t in range(128) for s in range(n // 2)]
    assert sorted(seen) == [(r, c) for r in range(64) for c in range(n)]


@pytest.mark.parametrize("a_type", ["f16", "bf16"])
def test_wgmma_kernel_assembles_for_sm90a(a_type, tmp_path):
    """sm_90a PTX from llvmlite; ptxas -arch=sm_90a: 4 wgmma a K of 64, no spill, no stack."""
    text = probe_ptx(128, a_type)
    assert ".target sm_90a" in text and SM90.ptx_arch == "sm_90"   # only wgmma code is sm_90a
    assert len(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n128k16", text)) == K // 16
    assert "wgmma.fence" in text and "wgmma.wait_group.sync.aligned 0" in text and ".local" not in text
    report = ptxas_report(text, SM90.wgmma_ptx_arch, tmp_path)
    assert "0 bytes spill stores, 0 bytes spill loads" in report and "0 bytes stack frame" in report
    assert int(re.search(r"Used (\d+) registers", report).group(1)) <= SM90.regs_per_thread
