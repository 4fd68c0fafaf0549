"""Element-wise ops, ``tile_broadcast`` and ``tile_reduce`` in the blocking and XeGPU
passes (the helpers ``blocking.py`` and ``xetile_to_xegpu.py`` call).

Rules (docs/decisions/014-blocking-and-block-messages.md):

* **One blocking per element-wise op.**  The operands and result of an element-wise op
  (``arith.*``/``math.*`` on vectors, casts, compares, select) are joined into one value
  family, together with the tiles their loads and stores use, so they share
  ``inner_blocks``; the sources and results of reductions and broadcasts and non-splat
  constants are element-wise families too.  Such a family is blocked like an accumulator:
  ``min(M, rows) x subgroup-size`` whatever its element width (M: the target's DPAS repeat
  count, ``Target.dpas_m``), or ``min(M, rows) x 1`` for an ``[rows, 1]`` column.
  A family that feeds a DPAS operand is blocked like that operand (by the tile_mma's
  input type, so an ``astype`` before the mma is blocked for the type it casts to); in
  SIMT a chain feeding A takes A's lane layout back to its loads, and B's VNNI image is
  the plain layout, so dpas takes the chain's blocks as they are.
* **Per block.**  The XeGPU conversion clones an element-wise op once per block; a
  broadcast picks, for every result block, the source block of the same row/column and
  stretches it with a 2-D ``xetile.tile_broadcast``; a reduction first combines blocks
  along the reduced grid dimension with the matching arith op, then reduces inside each
  block with a 2-D ``xetile.tile_reduce`` (lowered per lane by codegen).
"""
from __future__ import annotations

from xdsl.dialects import arith, func, vector
from xdsl.dialects.builtin import IntegerType, VectorType
from xdsl.ir import Operation, SSAValue

from ...dialects import _asm, retype, xetile
from ...dialects.walk import ops_in
from ...errors import LoweringError
from ..rewrites.constants import is_uniform, splat_value
from .families import Families

#: reduce kind -> (float combine op, int combine op); None where the kind has no such type
_COMBINE = {
    "add": (arith.AddfOp, arith.AddiOp), "mul": (arith.MulfOp, arith.MuliOp),
    "maximumf": (arith.MaximumfOp, None), "minimumf": (arith.MinimumfOp, None),
    "maxnumf": (arith.MaxnumfOp, None), "minnumf": (arith.MinnumfOp, None),
    "maxsi": (None, arith.MaxSIOp), "minsi": (None, arith.MinSIOp),
    "maxui": (None, arith.MaxUIOp), "minui": (None, arith.MinUIOp),
    "and": (None, arith.AndIOp), "or": (None, arith.OrIOp), "xor": (None, arith.XOrIOp),
}


def is_vector(v: SSAValue) -> bool:
    return isinstance(v.type, VectorType)


def is_elementwise(op: Operation) -> bool:
    """An arith/math op or an extern builtin call computing a vector element by element
    (not a constant)."""
    return ((op.name.startswith(("arith.", "math.")) and op.name != "arith.constant"
             or isinstance(op, xetile.ExternElementwiseOp)) and any(is_vector(r) for r in op.results))


def is_vector_source(op: Operation) -> bool:
    """Ops whose vector result needs a blocking of its own (no load/store/mma decides it)."""
    return is_elementwise(op) or isinstance(op, (xetile.TileBroadcastOp, xetile.TileReduceOp,
                                                 vector.BroadcastOp))


# --- blocking -----------------------------------------------------------------------------
def join_elementwise(families: Families, fn: func.FuncOp) -> set[SSAValue]:
    """Join the operands and results of element-wise ops (and the tiles their loads and
    stores use) into one family each; return the roots of those families."""
    for op in ops_in(fn):
        if is_elementwise(op):
            vecs = [v for v in list(op.operands) + list(op.results) if is_vector(v)]
            for v in vecs[1:]:
                families.union(vecs[0], v)
    roots = {families.find(r) for op in ops_in(fn) if is_elementwise(op) for r in op.results}
    # reductions and broadcasts read and write the element-wise lane layout (lane n: column n),
    # and so do non-splat constants (their SIMT form is a table of lane columns)
    roots |= {families.find(v) for op in ops_in(fn) if isinstance(op, (xetile.TileReduceOp, xetile.TileBroadcastOp))
              for v in (op.source, op.result)}
    roots |= {families.find(op.result) for op in ops_in(fn) if _is_non_splat_constant(op)}
    for op in ops_in(fn):
        if isinstance(op, (xetile.LoadTileOp, xetile.StoreTileOp)) and families.find(op.value) in roots:
            roots.discard(families.find(op.value))
            families.union(op.tile, op.value)
            roots.add(families.find(op.value))
    return {families.find(r) for r in roots}


def _is_non_splat_constant(op: Operation) -> bool:
    if not (isinstance(op, arith.ConstantOp) and is_vector(op.result)):
        return False
    return not is_uniform(op.value)


def c_blocks(shape, bits: int, sg: int, elementwise: bool, rows: int) -> tuple[int, int]:
    """inner_blocks of a value that is no DPAS operand (before the ``min(rows, tile rows)``
    cut): ``rows`` is the target's DPAS repeat count (``Target.dpas_m``), so that a DPAS
    result block is one such block.  i1 masks are never block-loaded: they take the
    element-wise blocking.

    A tile whose width is no multiple of the lanes' block (a column of 2, a 16x8 piece on
    16 lanes) is cut into ``[rows, 1]`` columns, each replicated in every lane like a row
    reduction's result: per-lane loads and stores, any width, at the cost of every lane
    doing every column's work."""
    cols = sg if (bits >= 16 or bits == 1 or elementwise) else 2 * sg
    if shape[1] == 1 or shape[1] % cols:
        return rows, 1
    return rows, cols


def blocked_dims(fn: func.FuncOp) -> None:
    """After retyping to 4-D: the dims of tile_reduce/tile_broadcast name both the grid
    and the in-block dimension (2-D dim d -> 4-D dims d and d + 2)."""
    for op in ops_in(fn):
        if isinstance(op, xetile.TileReduceOp) and len(op.source.type.get_shape()) == 4:
            dims = _asm.as_int_list(op.reduction_dims)
            if all(d < 2 for d in dims):
                op.properties["reduction_dims"] = _asm.int_array(sorted(dims + [d + 2 for d in dims]))
        elif isinstance(op, xetile.TileBroadcastOp) and len(op.source.type.get_shape()) == 4:
            src, res = op.source.type.get_shape(), op.result.type.get_shape()
            op.properties["broadcast_dims"] = _asm.int_array([i for i in range(4) if src[i] != res[i]])


# --- XeTile -> XeGPU ------------------------------------------------------------------------
def translate(tr, op: Operation) -> bool:
    """Lower ``op`` per block into translator ``tr``; False when ``op`` is none of ours."""
    if isinstance(op, xetile.TileBroadcastOp):
        _broadcast(tr, op)
    elif isinstance(op, xetile.TileReduceOp):
        _reduce(tr, op)
    elif isinstance(op, vector.BroadcastOp) and _blocked(op.vector):
        gr, gc, b0, b1 = op.vector.type.get_shape()
        btype = VectorType(op.vector.type.element_type, [b0, b1])
        src = tr.one(op.source)
        tr.vmap[op.vector] = [tr.emit(vector.BroadcastOp(src, btype), op).vector for _ in range(gr * gc)]
    elif is_elementwise(op) and any(_blocked(r) for r in op.results):
        _per_block(tr, op)
    else:
        return False
    return True


def _blocked(v: SSAValue) -> bool:
    return is_vector(v) and len(v.type.get_shape()) == 4


def _block_type(v: SSAValue) -> VectorType:
    return VectorType(v.type.element_type, v.type.get_shape()[2:])


def _per_block(tr, op: Operation) -> None:
    gr, gc = op.results[0].type.get_shape()[:2]
    outs = [[] for _ in op.results]
    for k in range(gr * gc):
        mapper = {v: tr.vmap[v][k] if _blocked(v) else tr.one(v) for v in op.operands}
        chosen = _constant_choice(op, mapper)
        if chosen is not None:  # a select whose block of conditions is one constant: no op
            if splat_value(chosen) == 0:  # masked off: tile_mma drops the block's DPAS
                tr.masked_off.add(chosen)
            outs[0].append(chosen)
            continue
        clone = tr.emit(op.clone(value_mapper=mapper), op)
        for res, new, out in zip(op.results, clone.results, outs):
            if _blocked(res):
                retype(new, _block_type(res))
            out.append(new)
    for res, out in zip(op.results, outs):
        tr.vmap[res] = out


def _constant_choice(op: Operation, mapper: dict):
    """For an ``arith.select`` whose condition block is a splat constant: the chosen
    operand's block (when that is a block of the same type), else None."""
    if op.name != "arith.select":
        return None
    cond, yes, no = op.operands
    if not (_blocked(yes) and _blocked(no)):
        return None
    value = splat_value(mapper[cond]) if _blocked(cond) else None
    if value is None:
        return None
    return mapper[yes] if value else mapper[no]


def _broadcast(tr, op: xetile.TileBroadcastOp) -> None:
    if not _blocked(op.result):
        raise LoweringError("tile_broadcast of an unblocked vector", op)
    sr, sc, s0, s1 = op.source.type.get_shape()
    rr, rc, b0, b1 = op.result.type.get_shape()
    btype = _block_type(op.result)
    src = tr.vmap[op.source]
    cache: dict[int, SSAValue] = {}
    out = []
    for i in range(rr):
        for j in range(rc):
            k = (i if sr > 1 else 0) * sc + (j if sc > 1 else 0)
            if k not in cache:
                dims = [d for d, (s, r) in enumerate(((s0, b0), (s1, b1))) if s != r]
                if any((s0, s1)[d] != 1 for d in dims):
                    raise LoweringError(f"tile_broadcast: source block {s0}x{s1} cannot be stretched to {b0}x{b1}",
                                        op)
                cache[k] = src[k] if not dims else tr.emit(xetile.TileBroadcastOp(src[k], dims, btype), op).result
            out.append(cache[k])
    tr.vmap[op.result] = out


def combine_op(kind: str, elem, op: Operation):
    """The arith op class that combines two partial results of a ``kind`` reduction on
    ``elem`` (also the workgroup reduction's, lowering/passes/wg_to_sg/vectors.py)."""
    cls = _COMBINE.get(kind, (None, None))[1 if isinstance(elem, IntegerType) else 0]
    if cls is None:
        raise LoweringError(f"tile_reduce <{kind}> on {elem} is not lowered", op)
    return cls


def _reduce(tr, op: xetile.TileReduceOp) -> None:
    if not _blocked(op.source):
        raise LoweringError("tile_reduce of an unblocked vector", op)
    dims = set(_asm.as_int_list(op.reduction_dims))
    gr, gc, b0, b1 = op.source.type.get_shape()
    kind, elem = op.kind.data, op.source.type.element_type
    combine = combine_op(kind, elem, op)
    src = tr.vmap[op.source]
    rows = range(gr) if 0 not in dims else [None]
    cols = range(gc) if 1 not in dims else [None]
    # a block dimension of 1 (an [M, 1] column, replicated in every lane) reduces to itself
    inner = [d - 2 for d in sorted(dims) if d >= 2 and (b0, b1)[d - 2] != 1]
    out = []
    for i in rows:
        for j in cols:
            parts = [src[a * gc + b] for a in (range(gr) if i is None else [i])
                     for b in (range(gc) if j is None else [j])]
            acc = parts[0]
            for p in parts[1:]:
                acc = tr.emit(combine(acc, p), op).result
            if inner:
                acc = tr.emit(xetile.TileReduceOp(kind, acc, inner), op).result
            out.append(acc)
    tr.vmap[op.result] = out
