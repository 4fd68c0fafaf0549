"""Hopper's warpgroup MMA (``wgmma.mma_async``, sm_90a) as inline PTX pieces: the 64-bit
shared-memory matrix descriptors, the 128-byte swizzle their tiles are written in, the
fence / commit / wait of the async proxy, and one ``m64nNk16`` step whose accumulators are
``N / 2`` f32 registers a thread.

The GEMM K loop built from them is :mod:`.wgmma_gemm`; :mod:`.wgmma_probe` builds a
one-warpgroup kernel from them alone (``tests/nvptx/test_nvptx_wgmma.py``,
``benchmarks/wgmma_probe.py``).

Example::

    desc = descriptor(b, smem_addr_i32, stride_bytes=1024)   # K-major, 128B swizzle
    fence(b); acc = mma_async(b, acc, desc_a, desc_b, n=128, a_type="f16", scale_d=1)
    commit_group(b); wait_group(b, 0)
"""
from __future__ import annotations

from llvmlite import ir

I32, I64, F32 = ir.IntType(32), ir.IntType(64), ir.FloatType()

#: the PTX ISA's matrix-descriptor swizzle field (bits 62-63): none, 128-, 64-, 32-byte
SWIZZLE_MODE = {0: 0, 128: 1, 64: 2, 32: 3}


def swizzle128(row: int, byte: int) -> int:
    """Byte offset of ``(row, byte)`` of a K-major tile of 128-byte rows in the 128-byte
    swizzle: the 16-byte chunk index XOR ``row % 8`` (8-row atoms of 1024 bytes, the
    atom 1024-byte aligned)."""
    chunk, within = divmod(byte, 16)
    return row * 128 + ((chunk ^ (row % 8)) * 16) + within


def descriptor_bits(addr: int, lead_bytes: int, stride_bytes: int, swizzle: int = 128) -> int:
    """The 64-bit descriptor as an integer (PTX ISA "Matrix Descriptor Format"): start
    address >> 4 in bits 0-13, leading-dimension byte offset >> 4 in 16-29, stride-
    dimension byte offset >> 4 in 32-45, swizzle mode in 62-63."""
    return (((addr & 0x3FFFF) >> 4) | (((lead_bytes >> 4) & 0x3FFF) << 16)
            | (((stride_bytes >> 4) & 0x3FFF) << 32) | (SWIZZLE_MODE[swizzle] << 62))


def descriptor(b: ir.IRBuilder, addr: ir.Value, stride_bytes: int, lead_bytes: int = 16,
               swizzle: int = 128) -> ir.Value:
    """The descriptor of the tile at the 32-bit shared address ``addr`` (see
    :func:`descriptor_bits`; the leading offset is unused by swizzled K-major tiles)."""
    start = b.lshr(b.and_(addr, ir.Constant(I32, 0x3FFFF)), ir.Constant(I32, 4))
    fixed = descriptor_bits(0, lead_bytes, stride_bytes, swizzle)
    return b.or_(b.zext(start, I64), ir.Constant(I64, fixed))


def _asm(b, text: str, constraints: str = "", args=(), ret: ir.Type = ir.VoidType()):
    ftype = ir.FunctionType(ret, [a.type for a in args])
    constraints = f"{constraints},~{{memory}}" if constraints else "~{memory}"
    return b.asm(ftype, text, constraints, list(args), True)


def fence(b) -> None:
    """``wgmma.fence``: register and shared-memory accesses before it are ordered before
    the next ``wgmma.mma_async``."""
    _asm(b, "wgmma.fence.sync.aligned;")


def proxy_fence(b) -> None:
    """``fence.proxy.async``: shared stores by threads (the generic proxy) become visible
    to wgmma's reads (the async proxy)."""
    _asm(b, "fence.proxy.async.shared::cta;")


def commit_group(b) -> None:
    _asm(b, "wgmma.commit_group.sync.aligned;")


def wait_group(b, pending: int, values: list | None = None) -> list | None:
    """Wait until at most ``pending`` committed wgmma groups are in flight.  ``values``
    (accumulators, f32) pass through the wait as tied operands, so that no use of them is
    scheduled before it; the values after the wait are returned."""
    text = f"wgmma.wait_group.sync.aligned {pending};"
    if not values:
        _asm(b, text)
        return None
    count = len(values)
    constraints = ",".join(["=f"] * count + [str(i) for i in range(count)])
    out = _asm(b, text, constraints, list(values), ir.LiteralStructType([F32] * count))
    return [b.extract_value(out, i) for i in range(count)]


def mma_async(b, acc: list, desc_a: ir.Value, desc_b: ir.Value, n: int, a_type: str,
              scale_d: int = 1, trans_b: int = 0) -> list:
    """One ``wgmma.mma_async.m64n{n}k16.f32.{a_type}.{a_type}``: ``acc`` (``n / 2`` f32
    values a thread, the warpgroup's 64 x n block) plus A (64 x 16) times B (16 x n), both
    read through descriptors; ``scale_d=0`` ignores ``acc`` (the first K step)."""
    count = n // 2
    assert len(acc) == count and a_type in ("f16", "bf16")
    regs = ", ".join(f"${i}" for i in range(count))
    text = ("{ .reg .pred p; setp.ne.b32 p, $%d, 0; "
            "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, $%d, $%d, p, 1, 1, 0, %d; }"
            % (count + 2, n, a_type, a_type, regs, count, count + 1, trans_b))
    constraints = ",".join(["=f"] * count + ["l", "l", "r"] + [str(i) for i in range(count)])
    out = _asm(b, text, constraints, [desc_a, desc_b, ir.Constant(I32, scale_d)] + list(acc),
               ir.LiteralStructType([F32] * count))
    return [b.extract_value(out, i) for i in range(count)]


def acc_position(lane: int, warp: int, slot: int) -> tuple[int, int]:
    """Row and column of accumulator ``slot`` of thread ``32 * warp + lane`` in the 64 x N
    block (PTX ISA, wgmma "Register Fragments", D of m64nNk16): warp w holds rows
    16w..16w+15 laid out as mma.m16n8's C, one 8-column block per 4 slots."""
    block, part = divmod(slot, 4)
    return 16 * warp + lane // 4 + 8 * (part // 2), 8 * block + 2 * (lane % 4) + part % 2
