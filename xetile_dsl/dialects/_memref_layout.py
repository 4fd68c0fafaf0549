"""Which way a 2-D base matrix is laid out, for the ``order`` rule of ``init_tile``.

The XeTile RFC: "The order must be consistent with the data layout specified by the memref
representing the base matrix": a row-major base (identity layout, ``strided<[N, 1]>``)
takes ``order = [1, 0]``; a column-major base (``affine_map<(d0, d1) -> (d1, d0)>``,
``affine_map<(d0, d1) -> (d1 * M + d0)>``, ``strided<[1, M]>``) takes ``order = [0, 1]``.
For an address (or a dynamic memref) the strides operands say the same when they are
constants: the unit stride is dimension 1 for row-major and dimension 0 for column-major.
"""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import AffineMapAttr, IntegerAttr, IntegerType, MemRefType, NoneAttr, StridedLayoutAttr
from xdsl.ir import Attribute, SSAValue
from xdsl.ir.affine import AffineDimExpr
from xdsl.utils.exceptions import VerifyException

ROW, COL = "row-major", "column-major"


def is_address(t: Attribute) -> bool:
    """``i64`` or ``ui64`` (the RFC's ``uint64``)."""
    return isinstance(t, IntegerType) and t.width.data == 64


def const_index(value: SSAValue) -> int | None:
    """The integer of an ``arith.constant`` operand, else None."""
    owner = value.owner
    if getattr(owner, "name", None) == "arith.constant":
        attr = owner.properties.get("value") or owner.attributes.get("value")
        if isinstance(attr, IntegerAttr):
            return attr.value.data
    return None


def _from_strides(strides: Sequence[int | None]) -> str | None:
    if len(strides) < 2:
        return ROW
    if strides[-1] == 1:
        return ROW
    if strides[-2] == 1:
        return COL
    return None


def memref_major(t: MemRefType) -> str | None:
    """ROW, COL, or None when the layout is neither (or not understood)."""
    layout = t.layout
    if isinstance(layout, NoneAttr):
        return ROW
    if isinstance(layout, StridedLayoutAttr):
        return _from_strides(list(layout.get_strides()))
    if isinstance(layout, AffineMapAttr):
        amap = layout.data
        if amap.num_dims != 2:
            return None
        if len(amap.results) == 2 and all(isinstance(r, AffineDimExpr) for r in amap.results):
            dims = [r.position for r in amap.results]
            return ROW if dims == [0, 1] else COL if dims == [1, 0] else None
        if len(amap.results) == 1 and not amap.num_symbols:
            base = amap.eval([0, 0], [])[0]
            strides = [amap.eval([1, 0], [])[0] - base, amap.eval([0, 1], [])[0] - base]
            return _from_strides(strides)
    return None


def check_order_matches(op_name: str, src: Attribute, order: Sequence[int], strides: Sequence[int | None]) -> None:
    """Raise when the tile ``order`` contradicts the base's layout."""
    want = ROW if tuple(order) == (1, 0) else COL
    if isinstance(src, MemRefType) and all(d >= 0 for d in src.get_shape()):
        have = memref_major(src)
    elif len(strides) == 2 and None not in strides:
        have = _from_strides(strides)
    else:
        return  # strides known only at run time: the user vouches for them
    if have != want:
        fix = "order = [0, 1]" if have == COL else "order = [1, 0] (the default)" if have == ROW else \
            "a row-major or column-major base"
        raise VerifyException(f"{op_name}: tile order {list(order)} expects a {want} base, but the base {src} "
                              f"with strides {list(strides) or 'from its type'} is "
                              f"{have or 'neither row- nor column-major'}; use {fix}")
