"""Address payloads of a loop's transposed 2D block reads, built once before the loop.

A ``load_nd {transpose}`` that one 32-bit ``read_transpose`` message serves
(:func:`..builtins.transposed_loads.transpose_kind`) goes through IGC's OpenCL builtin, whose
payload IGC rebuilds in the loop: it keeps one payload per surface and, for a second
block of it (the next 16 K rows of operand A), copies that payload and adds the offset
(``mov (8)`` + ``add`` per message).  As :mod:`.prefetch_payloads` does for prefetches,
codegen makes the payload of each such read of a loop-carried descriptor in the loop's
preheader with IGC's address-payload builtins and, in the loop, sets only its moving
coordinate (one ``mov`` per message).  Same message, same descriptor; on the f16 A^T.B
GEMM at 256x256 / [8, 4] x 32x64 this is 130 -> 127 hot-loop instructions.  Only where
``Target.hoist_transposed_read_payloads`` says it pays (pvc; Xe2's IGC keeps these
payloads itself); not in kernels with 64-bit offsets, for narrow per-lane arrays, for
padded reads or reads with cache hints.  The CPU device (PVC flavour) runs the same
calls, emulated from the payload's fields (:mod:`..builtins.payload`), so its tests check
the fields a GPU would read.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from xdsl.dialects import scf

from ...dialects import xegpu
from ...dialects.types import bit_width
from ...targets.target import READ_PAYLOAD_DEFAULT_CACHE_OPTION
from ..builtins import block2d as b2d
from ..builtins import payload as address_payload
from ..builtins import transposed_loads as transpose
from .prefetch_payloads import GLOBAL_PTR, candidates


@dataclass(frozen=True)
class HoistedRead:
    """A transposed read whose payload was made before its loop: which coordinates it sets."""

    payload: ir.Value
    moves_x: bool
    moves_y: bool


def _read_transpose_block(gen, op: xegpu.LoadNdOp) -> tuple[int, int, int] | None:
    """(element bits, memory rows, memory cols) when ``op`` is one ``read_transpose``
    message with neither padding nor cache hints, else None."""
    t = op.tensor_desc.type
    if op.transpose is None or op.padding is not None or t.map is None or t.block_attr.arr_len != 1:
        return None
    if any(getattr(op, k) is not None for k in ("l1_hint", "l2_hint", "l3_hint")):
        return None
    rows, cols = t.get_shape()
    bits = bit_width(t.element_type)
    (l0, l1), (d0, d1) = t.map.layout, t.map.data
    kind = transpose.transpose_kind(gen.target, bits, rows, cols, (l1, l0), (d1, d0))
    return (bits, rows, cols) if kind == "read_transpose" else None


def hoist(gen, loop: scf.ForOp) -> dict:
    """Make, at the builder's position (the loop's preheader), the payload of every
    transposed read of ``loop`` that can keep one; the map load op -> :class:`HoistedRead`
    for :func:`read`."""
    if not gen.target.hoist_transposed_read_payloads or gen.wide_offsets:
        return {}
    hoisted = {}
    for op, index, moves_x, moves_y in candidates(loop, xegpu.LoadNdOp):
        block = _read_transpose_block(gen, op)
        init = gen.v(op.tensor_desc if index is None else loop.iter_args[index])
        if block is None or gen.per_lane_array(op.tensor_desc) or init.base.type != GLOBAL_PTR:
            continue
        payload = transpose.create_read_payload(gen.lib, gen.b, init.surface(), *block)
        hoisted[op] = HoistedRead(payload, moves_x, moves_y)
    return hoisted


def read(gen, op: xegpu.LoadNdOp, hoisted: HoistedRead, wi_layout, wi_data) -> ir.Value:
    """The transposed read ``op`` through its hoisted payload (this lane's fragment under
    the logical sg_map ``(wi_layout, wi_data)``), or gathered where its column does not
    start a dword (:func:`..builtins.transposed_loads.dword_aligned_or_gather`); the test is in
    a wrapper, so that the loop body stays one block (:mod:`..latch_order`)."""
    d = gen.v(op.tensor_desc)
    bits, rows, cols = _read_transpose_block(gen, op)
    key = ("read_ap_t", bits, rows, cols, tuple(wi_layout), tuple(wi_data), hoisted.moves_x, hoisted.moves_y)
    fn = gen.lib._memoized(key, lambda: _build_read(gen.lib, *key[1:]))
    return gen.b.call(fn, d.surface() + [hoisted.payload])


def _build_read(bi, bits, rows, cols, wi_layout, wi_data, moves_x, moves_y) -> ir.Function:
    """``<frag> f(surface..., payload)`` of :func:`read`."""
    frag = b2d._fragment(bi, bits, cols, rows, wi_layout, wi_data)
    name = (f"__xetile_read_ap_transpose_or_gather_{bits}b_{rows}r{cols}x1c_{b2d._tag(frag)}"
            f"_{'x' if moves_x else ''}{'y' if moves_y else ''}")
    fn, builder = b2d._wrapper(bi, name, frag.vector_type(), [address_payload.PRIVATE_PTR])
    base, width, height, pitch, x, y, payload = fn.args
    gather = bi.load_2d_transposed(bits, rows, cols, wi_layout, wi_data, True)

    def message():
        words = transpose.read_through_payload(
            bi, builder, payload, x if moves_x else None, y if moves_y else None, bits, rows, cols,
            READ_PAYLOAD_DEFAULT_CACHE_OPTION)
        return builder.bitcast(words, frag.vector_type())

    builder.ret(transpose.dword_aligned_or_gather(
        builder, x, bits, frag.vector_type(), message, lambda: builder.call(gather, list(fn.args[:6]))))
    return fn


#: DPAS per loop iteration from which ordering the latch pays (benchmarks/gemm_isa.py,
#: pvc: the A^T.B GEMMs at 16 and 32 DPAS gain 5 and 7 instructions, at 4 and 8 they lose
#: 1 or 2)
ORDER_MIN_DPAS = 16


def orders_latch(gen, loop: scf.ForOp) -> bool:
    """Whether codegen orders ``loop``'s latch for IGC (:mod:`..latch_order`, its
    prefetches through moved payload copies): where ``Target.order_loop_latches`` says
    it pays, for a loop of at least :data:`ORDER_MIN_DPAS` DPAS whose 16-bit operand A
    comes from transposed reads that keep a hoisted payload (the A^T.B GEMM)."""
    if not gen.target.order_loop_latches:
        return False
    ops = list(loop.body.block.ops)
    if sum(isinstance(op, xegpu.DpasOp) for op in ops) < ORDER_MIN_DPAS:
        return False
    return any(isinstance(op, xegpu.LoadNdOp) and _is_operand_a(gen, op) for op in ops)


def _is_operand_a(gen, op: xegpu.LoadNdOp) -> bool:
    """Whether ``op`` is one ``read_transpose`` message of 16-bit operand A (one element
    per lane and row: its halves are de-interleaved into the DPAS operand)."""
    block = _read_transpose_block(gen, op)
    return block is not None and block[0] == 16 and tuple(op.tensor_desc.type.map.data) == (1, 1)
