"""Hopper's wgmma pieces (codegen/nvptx/wgmma.py) without a GPU: the descriptor bit
fields, the 128-byte swizzle against the bank model, the fragment positions of the
accumulators, and a one-warpgroup kernel (C[64, N] = A[64, 64] . Bt[N, 64]^T, both
K-major in swizzled shared memory, 4 K steps of m64nNk16) built from them, lowered by
llvmlite for sm_90a and assembled by ptxas: 4 wgmma.mma_async, no spill, no local memory.
benchmarks/wgmma_probe.py runs the same kernel on an H200 against torch."""
from __future__ import annotations

import re

import pytest
from llvmlite import ir

from xetile_dsl.codegen.nvptx import ptx as nvptx
from xetile_dsl.codegen.nvptx.wgmma import (
    F32, I32, I64, acc_position, commit_group, descriptor, descriptor_bits, fence, mma_async,
    proxy_fence, swizzle128, wait_group)
from xetile_dsl.targets.nvidia import SM90

from .test_nvptx_compile import ptxas_report

K = 64          # one 128-byte swizzle row of f16


def probe_module(n: int = 128, a_type: str = "f16") -> str:
    """LLVM IR of ``wgmma_probe(a, bt, c)``: 128 threads copy A (64 x 64) and Bt (n x 64)
    into 128B-swizzled shared memory with 16-byte loads, fence the async proxy, run 4
    K steps of wgmma and store the f32 accumulators to C (64 x n, row-major)."""
    module = nvptx.new_module("wgmma_probe")
    i8, v4 = ir.IntType(8), ir.VectorType(I32, 4)
    smem = ir.GlobalVariable(module, ir.ArrayType(i8, (64 + n) * 128), "stage", addrspace=3)
    smem.linkage, smem.align = "internal", 1024
    smem.initializer = ir.Constant(smem.type.pointee, ir.Undefined)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, I64, I64]), "wgmma_probe")
    b = ir.IRBuilder(fn.append_basic_block())
    tid_fn = ir.Function(module, ir.FunctionType(I32, []), "llvm.nvvm.read.ptx.sreg.tid.x")
    tid = b.call(tid_fn, [])
    base = b.ptrtoint(smem, I32)

    def copy(src, rows, smem_offset):
        for i in range(rows * 8 // 128):          # 16-byte chunks a thread
            chunk = b.add(tid, ir.Constant(I32, 128 * i))
            row, col = b.lshr(chunk, ir.Constant(I32, 3)), b.and_(chunk, ir.Constant(I32, 7))
            g = b.add(src, b.zext(b.shl(chunk, ir.Constant(I32, 4)), I64))
            val = b.load(b.inttoptr(g, v4.as_pointer(1)), align=16)
            swz = b.xor(col, b.and_(row, ir.Constant(I32, 7)))
            off = b.add(b.shl(row, ir.Constant(I32, 7)), b.shl(swz, ir.Constant(I32, 4)))
            dst = b.add(base, b.add(off, ir.Constant(I32, smem_offset)))
            b.store(val, b.inttoptr(b.zext(dst, I64), v4.as_pointer(3)), align=16)

    copy(fn.args[0], 64, 0)
    copy(fn.args[1], n, 64 * 128)
    proxy_fence(b)
    bar = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "llvm.nvvm.barrier0")
    b.call(bar, [])
    acc = [ir.Constant(F32, 0.0)] * (n // 2)
    fence(b)
    for step in range(K // 16):                    # 32 bytes of K a step inside the swizzle row
        da = descriptor(b, b.add(base, ir.Constant(I32, 32 * step)), stride_bytes=1024)
        db = descriptor(b, b.add(base, ir.Constant(I32, 64 * 128 + 32 * step)), stride_bytes=1024)
        acc = mma_async(b, acc, da, db, n, a_type, scale_d=int(step > 0))
    commit_group(b)
    wait_group(b, 0)
    lane, warp = b.and_(tid, ir.Constant(I32, 31)), b.lshr(tid, ir.Constant(I32, 5))
    row0 = b.add(b.shl(warp, ir.Constant(I32, 4)), b.lshr(lane, ir.Constant(I32, 2)))
    col0 = b.shl(b.and_(lane, ir.Constant(I32, 3)), ir.Constant(I32, 1))
    for slot, v in enumerate(acc):
        dr, dc = acc_position(0, 0, slot)
        idx = b.add(b.mul(b.add(row0, ir.Constant(I32, dr)), ir.Constant(I32, n)), b.add(col0, ir.Constant(I32, dc)))
        addr = b.add(fn.args[2], b.shl(b.zext(idx, I64), ir.Constant(I64, 2)))
        b.store(v, b.inttoptr(addr, F32.as_pointer(1)), align=4)
    b.ret_void()
    nvptx.mark_kernel(module, fn, 128)
    return str(module)


def probe_ptx(n: int = 128, a_type: str = "f16") -> str:
    return nvptx.to_ptx(probe_module(n, a_type), SM90.wgmma_ptx_arch, SM90.ptx_features)


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
