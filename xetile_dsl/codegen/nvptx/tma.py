"""Hopper's tensor memory accelerator (TMA) as inline PTX pieces (sm_90): the tensor-map
kernel parameter, ``cp.async.bulk.tensor.2d`` loads into shared memory that complete on an
``mbarrier`` by transaction bytes, and the mbarrier's init, ``arrive.expect_tx`` and
parity wait.

The tensor map is a 128-byte opaque parameter (``.param .align 64 .b8 [128]``) marked
``grid_constant`` so that its address is the parameter's own (``cvta.param``), not a
local copy; the host makes it (:mod:`xetile_dsl.runtime.tensor_maps`).  The GEMM that
uses these is :mod:`.wgmma_gemm`, the attention key loops :mod:`.wgmma_attention`.

Example::

    init(b, bar, 1); fence_init(b)                   # one thread, then bar.sync
    arrive_expect_tx(b, bar, 16384)                  # the producer thread
    load_2d(b, dst, map_addr, col, row, bar)         # box at (row, col), 128B swizzle
    wait_parity(b, bar, phase)                       # every consumer
"""
from __future__ import annotations

from llvmlite import ir

I1, I32, I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
#: the LLVM type of one tensor-map parameter (passed byval, 64-byte aligned)
MAP_TYPE = ir.ArrayType(I64, 16)


def _asm(b, text: str, constraints: str = "", args=(), ret: ir.Type = ir.VoidType()):
    ftype = ir.FunctionType(ret, [a.type for a in args])
    constraints = f"{constraints},~{{memory}}" if constraints else "~{memory}"
    return b.asm(ftype, text, constraints, list(args), True)


def map_param(fn: ir.Function, index: int) -> None:
    """Mark argument ``index`` of the kernel ``fn`` a tensor map: byval, 64-byte aligned
    (the ``grid_constant`` annotation is :func:`.ptx.mark_kernel`'s)."""
    arg = fn.args[index]
    arg.add_attribute("byval")
    arg.attributes.align = 64


def map_address(b, arg) -> ir.Value:
    """The generic address of the tensor-map parameter ``arg`` (i64)."""
    return b.ptrtoint(arg, I64)


def prefetch_map(b, addr) -> None:
    _asm(b, "prefetch.tensormap [$0];", "l", [addr])


def init(b, bar, count: int) -> None:
    """``mbarrier.init``: the barrier at the 32-bit shared address ``bar`` expects ``count``
    arrivals a phase."""
    _asm(b, f"mbarrier.init.shared::cta.b64 [$0], {count};", "r", [bar])


def fence_init(b) -> None:
    """The barriers' initialisation seen by the async proxy (TMA's complete_tx)."""
    _asm(b, "fence.mbarrier_init.release.cluster;")


def arrive_expect_tx(b, bar, nbytes: int) -> None:
    """This thread's arrival on ``bar``, first raising the phase's expected transaction
    count by ``nbytes`` (the phase completes when the copies have delivered them)."""
    _asm(b, f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], {nbytes};", "r", [bar])


def arrive(b, bar) -> None:
    """This thread's plain arrival on ``bar`` (no transaction bytes)."""
    _asm(b, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r", [bar])


def load_2d(b, dst, map_addr, col, row, bar) -> None:
    """The tensor map's box at element coordinates (``row``, ``col``) (i32; the innermost
    dimension first in PTX) into shared memory at ``dst``, completing on ``bar``; parts of
    the box outside the tensor read as zeros and still count their bytes."""
    _asm(b, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
            "[$0], [$1, {$2, $3}], [$4];", "r,l,r,r,r", [dst, map_addr, col, row, bar])


def st_shared_b32(b, addr, value) -> None:
    """A 32-bit store to the shared address ``addr`` (i32)."""
    _asm(b, "st.shared.b32 [$0], $1;", "r,r", [addr, value])


def st_shared_b16(b, addr, value) -> None:
    """A 16-bit store to the shared address ``addr`` (i32)."""
    _asm(b, "st.shared.b16 [$0], $1;", "r,h", [addr, value])


def fence_proxy_async_shared(b) -> None:
    """This thread's shared-memory writes made visible to the async proxy (a TMA store)."""
    _asm(b, "fence.proxy.async.shared::cta;")


def store_2d(b, map_addr, col, row, src) -> None:
    """Shared memory at ``src`` into the tensor map's box at element coordinates (``row``,
    ``col``) (i32), in the current bulk group; box parts past the tensor are not written."""
    _asm(b, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$1, $2}], [$3];", "l,r,r,r",
         [map_addr, col, row, src])


def store_commit_and_wait(b) -> None:
    """Close this thread's bulk group and wait until its copies have read shared memory
    (the program may then exit or reuse it; the global writes complete on their own)."""
    _asm(b, "cp.async.bulk.commit_group;")
    _asm(b, "cp.async.bulk.wait_group.read 0;")


def load_nd(b, dst, map_addr, coords: list, bar) -> None:
    """:func:`load_2d` for a map of ``len(coords)`` dimensions (2 to 5): the box at element
    ``coords`` (i32, the innermost dimension first)."""
    rank = len(coords)
    if rank == 2:
        load_2d(b, dst, map_addr, coords[0], coords[1], bar)
        return
    names = ", ".join(f"${2 + i}" for i in range(rank))
    _asm(b, f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes "
            f"[$0], [$1, {{{names}}}], [${2 + rank}];", ",".join(["r", "l"] + ["r"] * rank + ["r"]),
         [dst, map_addr, *coords, bar])


def try_wait_parity(b, bar, phase) -> ir.Value:
    """Whether the phase of parity ``phase`` (i32, 0 or 1) of ``bar`` has completed (i1;
    the instruction may suspend the thread a while before it answers)."""
    ok = _asm(b, "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; selp.u32 $0, 1, 0, p; }",
              "=r,r,r", [bar, phase], I32)
    return b.icmp_unsigned("!=", ok, ir.Constant(I32, 0))


def wait_parity(b, bar, phase) -> None:
    """Spin on :func:`try_wait_parity` until the phase has completed."""
    loop, done = b.append_basic_block("mbar.wait"), b.append_basic_block("mbar.done")
    b.branch(loop)
    b.position_at_end(loop)
    b.cbranch(try_wait_parity(b, bar, phase), done, loop)
    b.position_at_end(done)
