"""A one-warpgroup wgmma kernel built from :mod:`.wgmma`'s pieces alone, without the
compiler: ``C[64, N] = A[64, 64] . Bt[N, 64]^T``, both K-major in 128B-swizzled shared
memory, 4 K steps of ``m64nNk16``.  ``tests/nvptx/test_nvptx_wgmma.py`` assembles it for
sm_90a; ``benchmarks/wgmma_probe.py`` runs it on a GPU against torch.

    >>> ".target sm_90a" in probe_ptx(64)
    True
"""
from __future__ import annotations

from llvmlite import ir

from ...targets.nvidia import SM90
from . import ptx as nvptx
from .wgmma import F32, I32, I64, acc_position, commit_group, descriptor, fence, mma_async, proxy_fence, wait_group

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
