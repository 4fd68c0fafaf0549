"""Codegen of the 2-D slice of an N-D array (frontend/array_views.py): a
``memref.reinterpret_cast`` of a global array with a dynamic offset, extents and row
stride becomes the array's pointer advanced by the offset (elements, as bytes) and the
view's extents and strides; the descriptors made from it tile the slice like a 2-D
array argument (docs/decisions/026-nd-arrays.md)."""
from __future__ import annotations

from llvmlite import ir

from ...dialects.types import bit_width

I8, I64 = ir.IntType(8), ir.IntType(64)


def is_dynamic_view(op) -> bool:
    """Whether a ``memref.reinterpret_cast`` has a runtime offset, extents or strides (the
    slice of an N-D array), as opposed to the static views of SLM buffers."""
    return bool(op.offsets or op.sizes or op.strides)


def reinterpret(gen, op) -> None:
    """The slice's pointer, extents and strides (each static or dynamic)."""
    dyn_offsets, dyn_sizes, dyn_strides = iter(op.offsets), iter(op.sizes), iter(op.strides)

    def resolved(static, dynamic) -> list:
        return [gen.v(next(dynamic)) if v < -(2 ** 62) else ir.Constant(I64, v)
                for v in (int(x) for x in static.get_values())]

    offset, = resolved(op.static_offsets, dyn_offsets)
    sizes = resolved(op.static_sizes, dyn_sizes)
    strides = resolved(op.static_strides, dyn_strides)
    elem_bytes = bit_width(op.result.type.element_type) // 8
    b = gen.b
    ptr = b.gep(gen.v(op.source), [b.mul(offset, ir.Constant(I64, elem_bytes))], source_etype=I8)
    gen.memrefs[op.result] = (ptr, sizes, strides)
    gen.values[op.result] = ptr
