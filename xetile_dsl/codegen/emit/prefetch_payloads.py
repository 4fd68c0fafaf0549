"""Address payloads of a loop's 2D block prefetches, built once before the loop.

IGC keeps the payload register of a 2D block *load* whose surface does not change in a
loop and rewrites only its moving coordinate each iteration, but it rebuilds the whole
payload of a *prefetch* (base, width, height, pitch, x, y, block shape: 7 or 8
instructions) on every iteration.  For a prefetch of a loop-carried descriptor whose
surface the loop does not change (its yield is the descriptor moved by
``update_nd_offset``), codegen therefore makes the payload in the loop's preheader with
IGC's address-payload builtins and, in the loop, sets only the coordinates that move
(a coordinate whose every update adds a constant 0 keeps its value).  On the RFC 2.1
GEMM this is 68 -> 53 hot-loop instructions (docs/decisions/021-code-shaped-for-igc.md).
Everything else keeps the OpenCL prefetch builtin.  The CPU device runs the same calls,
emulated (:mod:`..builtins.payload`).

In a loop that codegen orders for IGC (:func:`.transposed_payloads.orders_latch`,
:mod:`..latch_order`) the payload is not written in the loop: each prefetch goes through a
copy moved by the distance its descriptor moved (``copyBlock2DAddressPayload`` and
``addBlock2DAddressPayloadBlock{X,Y}``, a ``mov (8)`` and an ``add``).  A payload written
in place is still being read by the last iteration's prefetch when the loop branches
back, and IGC waits for that with three dummy ``mov``s and a ``sync`` per prefetch
(ocloc 26.27, pvc).  Elsewhere the in-place form is as short or shorter (GEMMs A.B and
A.Bt at 128x256: 83 and 80 in place, 91 and 87 through copies).
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import BlockArgument, SSAValue

from ...dialects import xegpu
from ...dialects.types import bit_width
from ...targets.target import PREFETCH_PAYLOAD_CACHE_OPTION
from ..builtins import block2d
from ..builtins import payload as address_payload

GLOBAL_PTR = ir.PointerType(addrspace=1)


@dataclass(frozen=True)
class HoistedPrefetch:
    """A prefetch whose payload was made before its loop at ``origin`` (x, y): which
    coordinates move, and whether it prefetches through a moved copy (module doc)."""

    payload: ir.Value
    origin: tuple[ir.Value, ir.Value]
    moves_x: bool
    moves_y: bool
    cache_option: int
    copied: bool


def _is_zero(value: SSAValue) -> bool:
    """Whether ``value`` is the constant 0."""
    owner = value.owner
    return (isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr)
            and owner.value.value.data == 0)


def _updates_from(value: SSAValue, origin: BlockArgument) -> list | None:
    """The ``update_nd_offset`` ops that make ``value`` from ``origin``, or None when
    ``value`` is not ``origin`` moved by offset updates alone."""
    updates = []
    while value is not origin:
        if not isinstance(value.owner, xegpu.UpdateNdOffsetOp):
            return None
        updates.append(value.owner)
        value = value.owner.tensor_desc
    return updates


def _moving_axes(updates: list) -> tuple[bool, bool]:
    """(x moves, y moves): whether some update adds a non-zero offset along x / y."""
    moves_y = any(not _is_zero(u.offsets[0]) for u in updates)
    moves_x = any(not _is_zero(u.offsets[1]) for u in updates)
    return moves_x, moves_y


def _defined_outside(value: SSAValue, loop: scf.ForOp) -> bool:
    """Whether ``value`` is defined before ``loop`` (not in it or in its body's regions)."""
    parent = value.block.parent_op() if isinstance(value, BlockArgument) else value.owner
    while parent is not None:
        if parent is loop:
            return False
        parent = parent.parent_op()
    return True


def candidates(loop: scf.ForOp, kind: type = xegpu.PrefetchNdOp):
    """(op, iter_arg index or None, x moves, y moves) per op of type ``kind`` (a prefetch,
    or a load for :mod:`.transposed_payloads`) at the top of the loop body whose
    descriptor is defined before the loop (index None, nothing moves) or is a
    loop-carried one moved only by offset updates."""
    body = loop.body.block
    yielded = body.last_op.operands
    for op in body.ops:
        if not isinstance(op, kind):
            continue
        if _defined_outside(op.tensor_desc, loop):
            yield op, None, False, False
            continue
        arg = op.tensor_desc
        while not isinstance(arg, BlockArgument) and isinstance(arg.owner, xegpu.UpdateNdOffsetOp):
            arg = arg.owner.tensor_desc
        if not isinstance(arg, BlockArgument) or arg.block is not body or arg.index == 0:
            continue
        inside = _updates_from(op.tensor_desc, arg)
        carried = _updates_from(yielded[arg.index - 1], arg)
        if inside is None or carried is None:
            continue
        yield (op, arg.index - 1, *_moving_axes(inside + carried))


def hoist(gen, loop: scf.ForOp, copied: bool = False) -> dict:
    """Make, at the builder's position (the loop's preheader), the payload of every
    prefetch of ``loop`` that can keep one; the map prefetch op -> :class:`HoistedPrefetch`
    for :func:`prefetch`, through moved copies when ``copied``.  Nothing on targets
    without 2D block IO, in kernels with 64-bit offsets, or for narrow per-lane arrays; on
    the CPU device the payload builtins are emulated (:mod:`..builtins.payload`)."""
    lib, target = gen.lib, gen.target
    if not target.has_2d_block_io or gen.wide_offsets:
        return {}
    hoisted = {}
    for op, index, moves_x, moves_y in candidates(loop):
        t = op.tensor_desc.type
        rows, cols = t.get_shape()
        bits, count = bit_width(t.element_type), t.block_attr.arr_len
        hints = {k: getattr(op, k).data for k in ("l1_hint", "l2_hint", "l3_hint") if getattr(op, k) is not None}
        option = PREFETCH_PAYLOAD_CACHE_OPTION.get(target.cache_controls(hints))
        init = gen.v(op.tensor_desc if index is None else loop.iter_args[index])
        if (option is None or gen.per_lane_array(op.tensor_desc) or init.base.type != GLOBAL_PTR
                or not block2d.prefetch_legal(target, bits, rows, cols, count)):
            continue
        payload = address_payload.create_payload(lib, gen.b, init.surface(), rows, cols, count)
        hoisted[op] = HoistedPrefetch(payload, (init.x, init.y), moves_x, moves_y, option, copied)
    return hoisted


def prefetch(gen, op: xegpu.PrefetchNdOp, hoisted: HoistedPrefetch) -> None:
    """The prefetch ``op`` through its hoisted payload: moved in place to the descriptor's
    position, or (``hoisted.copied``) through a copy offset by the distance the descriptor
    moved since the payload was made (module doc)."""
    d = gen.v(op.tensor_desc)
    t = op.tensor_desc.type
    rows, cols = t.get_shape()
    shape = (bit_width(t.element_type), rows, cols, t.block_attr.arr_len, hoisted.cache_option)
    if not hoisted.copied:
        address_payload.set_position(gen.lib, gen.b, hoisted.payload, d.x if hoisted.moves_x else None,
                                      d.y if hoisted.moves_y else None)
        address_payload.prefetch(gen.lib, gen.b, hoisted.payload, *shape)
        return
    x0, y0 = hoisted.origin
    address_payload.prefetch_moved(gen.lib, gen.b, hoisted.payload, *shape,
                                    gen.b.sub(d.x, x0) if hoisted.moves_x else None,
                                    gen.b.sub(d.y, y0) if hoisted.moves_y else None)
