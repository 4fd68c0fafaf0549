"""Non-splat constant vectors (``xt.arange``, the index row of ``argmax``/``argmin``)
through the lowering passes.

Rules:

* **Workgroup -> subgroup.** A constant whose values are affine in the row and column
  (``v[i, j] = v0 + a*i + b*j``, which every ``arange`` and its broadcasts are) becomes,
  per subgroup piece, the piece-local constant ``v0 + a*i + b*j`` plus ``a*row0 + b*col0``
  of the piece's offsets (subgroup-dependent, a ``vector.broadcast`` of a scalar).  Other
  non-splat constants are reported unless every subgroup's piece holds the same values.
* **Blocking** reorders the values into the ``[gr, gc, b0, b1]`` blocked form; the XeGPU
  conversion gives each block its own constant (a splat when its values are equal).
* **SIMT.** Lane ``n`` of a ``b0 x sg`` block in the element-wise map ``[1, sg] x [1, 1]``
  holds column ``n``: the constant becomes a lane table ``vector<sg x b0 x 1>`` read with
  ``vector.extract %table[%lane]`` (``gpu.lane_id``).  A replicated ``[R, 1]`` column is
  the same constant in every lane.  Codegen puts a lane table in constant memory.
"""
from __future__ import annotations

import numpy as np
from xdsl.dialects import arith, gpu, vector
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IndexType, IntegerType, VectorType

from ...dialects import retype
from ...errors import LoweringError


def values(const: arith.ConstantOp) -> np.ndarray:
    """The constant's values in its vector shape (a splat is expanded)."""
    t = const.result.type
    shape = tuple(t.get_shape())
    if _same_bytes(const.value):   # a splat: one element unpacked, not thousands
        return np.full(shape, first_value(const.value), dtype=object)
    return np.array(list(const.value.get_values()), dtype=object).reshape(shape)


def first_value(attr: DenseIntOrFPElementsAttr):
    """``attr.get_values()[0]`` without unpacking the others (a 256x256 zero accumulator
    is stored element by element: ~3 ms to unpack)."""
    data, count = attr.data.data, len(attr)
    return attr.get_element_type().unpack(data[:len(data) // count], 1)[0]


def is_splat(const: arith.ConstantOp) -> bool:
    return is_uniform(const.value)


def splat_value(v):
    """The one value of a splat vector constant ``v`` (an SSA value), else None."""
    owner = getattr(v, "owner", None)
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.result.type, VectorType) \
            and isinstance(owner.value, DenseIntOrFPElementsAttr) and is_uniform(owner.value):
        return first_value(owner.value)
    return None


def is_uniform(attr: DenseIntOrFPElementsAttr) -> bool:
    """Whether every value of ``attr`` equals its first (``==``: 0.0 and -0.0 are equal,
    a NaN equals nothing).  When every element has the first one's bytes (a zero tile of
    65536 elements) that is decided without unpacking them all: equal unless a NaN."""
    data, count = attr.data.data, len(attr)
    size = len(data) // count if count else 0
    if count > 1 and data == data[:size] * count:
        first = attr.get_element_type().unpack(data[:size], 1)[0]
        return first == first
    flat = attr.get_values()
    return all(v == flat[0] for v in flat[1:])


def dense(t: VectorType, arr: np.ndarray) -> DenseIntOrFPElementsAttr:
    """``dense<...>`` of type ``t`` holding ``arr`` (a splat when all values are equal).
    A tile whose raw values all compare equal (numpy's ``==``, as Python's on the
    converted values: -0.0 equals 0.0, a NaN nothing) is a splat without converting each
    element (a zero accumulator is thousands of them)."""
    arr = np.asarray(arr)
    if arr.size > 1 and arr.dtype != object and bool((arr == arr.reshape(-1)[0]).all()):
        return DenseIntOrFPElementsAttr.from_list(t, [_py(np.asarray(arr.reshape(-1)[:1], dtype=object)[0])])
    flat = [_py(v) for v in np.asarray(arr, dtype=object).reshape(-1)]
    if all(v == flat[0] for v in flat[1:]):
        return DenseIntOrFPElementsAttr.from_list(t, [flat[0]])
    return DenseIntOrFPElementsAttr.from_list(t, flat)


def _py(v):
    return float(v) if isinstance(v, float) else int(v)


# --- blocking and XeGPU ----------------------------------------------------------------------
def block_grid(arr: np.ndarray, b0: int, b1: int) -> np.ndarray:
    """``[r, c]`` values -> ``[r/b0, c/b1, b0, b1]`` (block row, block column, in-block)."""
    r, c = arr.shape
    return arr.reshape(r // b0, b0, c // b1, b1).transpose(0, 2, 1, 3)


def retype_blocked(const: arith.ConstantOp, new: VectorType, b0: int, b1: int) -> None:
    """Blocking: the constant's values in the blocked order of ``new``."""
    if _same_bytes(const.value):   # a splat: reordering changes nothing (nor converts each element)
        const.properties["value"] = dense(new, np.full(1, first_value(const.value), dtype=object))
        return
    const.properties["value"] = dense(new, block_grid(values(const), b0, b1))


def block_attrs(const: arith.ConstantOp) -> list[DenseIntOrFPElementsAttr]:
    """XeGPU: one ``dense<>`` per block of a blocked 4-D constant, row-major over the grid."""
    t = const.result.type
    gr, gc, b0, b1 = t.get_shape()
    arr = values(const)
    btype = VectorType(t.element_type, [b0, b1])
    if _same_bytes(const.value):
        # every block holds the same bytes (a zero accumulator): one dense<> for all, as
        # an attribute is immutable; each costs ~90 us to build
        return [dense(btype, arr[0, 0])] * (gr * gc)
    return [dense(btype, arr[i, j]) for i in range(gr) for j in range(gc)]


def _same_bytes(attr: DenseIntOrFPElementsAttr) -> bool:
    """Whether every element of ``attr`` is stored with the same bytes (a splat is one)."""
    data, count = attr.data.data, len(attr)
    size = len(data) // count if count else 0
    return count <= 1 or data == data[:size] * count


# --- SIMT --------------------------------------------------------------------------------------
def distribute(const: arith.ConstantOp, fragment: VectorType, sg_map, lanes: int) -> bool:
    """SIMT form of a constant whose per-lane fragment type is ``fragment``.  ``sg_map``
    is the (layout, data) of the value's role, None for a replicated column.  True when
    the constant became a lane table (its users then read ``vector.extract``'s result)."""
    t = const.result.type
    if is_splat(const):
        const.properties["value"] = DenseIntOrFPElementsAttr.from_list(fragment, [_py(values(const).flat[0])])
        return False
    arr = values(const)
    shape = tuple(t.get_shape())
    if sg_map is None:  # every lane holds the whole value
        const.properties["value"] = dense(fragment, arr.reshape(fragment.get_shape()))
        return False
    _read_by_lane(const, _lane_table(arr, shape, sg_map, lanes, const), fragment)
    return True


def _lane_table(arr: np.ndarray, shape: tuple, sg_map, lanes: int, const) -> np.ndarray:
    """``[lanes, units, per]``: lane n's fragment of ``arr`` under the lane layout ``sg_map``,
    in the order every SIMT fragment uses (codegen's ``Fragment.elements``): unit
    ``cb * row_units + rb`` (column blocks outer), element ``i * d1 + j`` inside it; lane n
    sits at row ``n // l1``, column ``n % l1`` of the layout."""
    layout, data = sg_map
    if len(shape) == 1 and shape[0] == lanes:
        return arr.reshape(lanes, 1)
    (l0, l1), (d0, d1) = layout, data
    if len(shape) != 2 or l0 * l1 != lanes or shape[0] % (l0 * d0) or shape[1] % (l1 * d1):
        raise LoweringError(f"a constant {'x'.join(map(str, shape))} block with different values per lane cannot be "
                            f"spread over the lane layout {list(layout)} x {list(data)}: its rows must be a multiple "
                            f"of {l0 * d0} and its columns of {l1 * d1}", const)
    rows, cols = shape
    # [rb, lr, i, cb, lc, j] -> [lr, lc, cb, rb, i, j] -> [lane, unit, per]
    grid = arr.reshape(rows // (l0 * d0), l0, d0, cols // (l1 * d1), l1, d1).transpose(1, 4, 3, 0, 2, 5)
    return grid.reshape(lanes, (rows * cols) // (lanes * d0 * d1), d0 * d1)


def _read_by_lane(const: arith.ConstantOp, table: np.ndarray, fragment: VectorType) -> None:
    """Turn ``const`` into the lane table and read this lane's row of it."""
    elem = const.result.type.element_type
    ttype = VectorType(elem, [table.shape[0]] + list(fragment.get_shape()))
    const.properties["value"] = dense(ttype, table.reshape(ttype.get_shape()))
    retype(const.result, ttype)
    lane = gpu.LaneIdOp()
    read = vector.ExtractOp(const.result, [lane.result], fragment)
    for op in (lane, read):
        op.location = const.location
    const.parent_block().insert_ops_after([lane, read], const)
    for use in list(const.result.uses):
        if use.operation is not read:
            use.operation.operands[use.index] = read.result


def is_lane_read(op) -> bool:
    """``vector.extract %table[%lane]`` made by :func:`distribute`."""
    return (isinstance(op, vector.ExtractOp) and len(op.dynamic_position) == 1
            and isinstance(op.vector.owner, arith.ConstantOp))


# --- workgroup -> subgroup ------------------------------------------------------------------------
def affine_coefficients(const: arith.ConstantOp):
    """``(v0, a, b)`` with ``v[i, j] == v0 + a*i + b*j`` for an integer constant, else None."""
    t = const.result.type
    if not isinstance(t.element_type, (IntegerType, IndexType)) or len(t.get_shape()) != 2:
        return None
    arr = values(const).astype(np.int64)
    r, c = arr.shape
    v0 = int(arr[0, 0])
    a = int(arr[1, 0] - v0) if r > 1 else 0
    b = int(arr[0, 1] - v0) if c > 1 else 0
    rows, cols = np.arange(r)[:, None], np.arange(c)[None, :]
    return (v0, a, b) if np.array_equal(arr, v0 + a * rows + b * cols) else None


def distribute_workgroup(dist, op: arith.ConstantOp, m) -> list:
    """Each subgroup's pieces of a workgroup constant under wg_map ``m`` (``dist`` is the
    wg-to-sg rebuilder): a splat stays a splat; an affine constant is the piece-local
    constant plus the piece's offset term; anything else is reported."""
    t = op.result.type
    shape = tuple(t.get_shape())
    (n0, n1), piece = dist._sg_shape(m, shape)
    ptype = VectorType(t.element_type, list(piece))
    if is_splat(op):   # one attribute for every piece (not the whole tile expanded per piece)
        attr = DenseIntOrFPElementsAttr.from_list(ptype, [_py(first_value(op.value))])
        return [dist.emit(arith.ConstantOp(attr), op).result for _ in range(n0 * n1)]
    coeffs = affine_coefficients(op)
    if coeffs is None:
        raise LoweringError("a workgroup-level constant with different values per element must be affine in the row "
                            "and column (like xt.arange and its broadcasts) to be distributed over subgroups", op)
    v0, a, b = coeffs
    local = values(op)[:piece[0], :piece[1]]
    base = dist.emit(arith.ConstantOp(dense(ptype, local)), op).result
    r, c = dist._coords(m.layout, op)
    zero = dist.const_index(0, op)
    out = []
    for i in range(n0):
        row0 = dist._piece_offset(zero, r, i, shape[0], m.layout[0], piece[0], op)
        for j in range(n1):
            col0 = dist._piece_offset(zero, c, j, shape[1], m.layout[1], piece[1], op)
            out.append(_plus_offset(dist, base, ptype, [(a, row0), (b, col0)], op))
    return out


def _plus_offset(dist, base, ptype: VectorType, terms, op):
    """``base + sum(coef * index)`` element-wise (the scalar broadcast over the piece)."""
    total = None
    for coef, idx in terms:
        if coef == 0:
            continue
        term = dist.emit(arith.MuliOp(idx, dist.const_index(coef, op)), op).result
        total = term if total is None else dist.emit(arith.AddiOp(total, term), op).result
    if total is None:
        return base
    if not isinstance(ptype.element_type, IndexType):
        total = dist.emit(arith.IndexCastOp(total, ptype.element_type), op).result
    spread = dist.emit(vector.BroadcastOp(total, ptype), op).vector
    return dist.emit(arith.AddiOp(base, spread), op).result
