"""``tile_transpose`` in registers: lane shuffles instead of an SLM round trip.

The helpers the transpose passes, blocking, the XeGPU conversion and the SIMT pass call
(docs/decisions/016-transposes.md).

* **When** (:func:`fits_registers`, :func:`register_transposable`): a subgroup-level
  transpose of an ``[R, C]`` value whose dims are multiples of the subgroup size ``L`` and
  whose elements are 16 or 32 bits wide (16-bit elements are widened to 32 bits for the
  shuffles; 8-bit values keep the SLM path: their loads and stores use ``2L``-wide blocks),
  at most half the default register file as 32-bit words (larger ones spill),
  and whose source and result are not (through element-wise chains) operand A of a
  tile_mma: A's lane layouts (tf32 ``[2, 8]``, ARC's packed pairs) do not hold one block
  column per lane.
* **Blocking**: source and result keep their own blocks, ``b x L`` with ``b`` a divisor or a
  multiple of ``L`` (accumulator-like ``M x L``, B's ``K x L``); each holds one column per lane.
  ``tile_transpose`` stays 2-D (the RFC gives it no 4-D form): ``tile_unpack`` of the source
  blocks, ``tile_transpose``, ``tile_pack`` into the result's blocks (:func:`unpack_around`).
* **XeGPU** (:func:`transpose_to_xegpu`): the value is cut into ``L x L`` squares; square ``(p, q)`` of
  the source (rows ``pL..``, columns ``qL..``) is joined from its blocks with
  ``vector.insert_strided_slice`` (or cut from a taller block with
  ``vector.extract_strided_slice``), transposed with ``vector.transpose %sq, [1, 0]`` and is
  square ``(q, p)`` of the result, whose blocks are cut from (or joined of) the squares the
  same way. 16-bit squares go two at a time: packed into the low and high halves of i32
  words (``arith.bitcast``/``extui``/``shli``/``ori``), one transpose, unpacked
  (``trunci``/``shrui``), so one shuffle moves two elements.
* **SIMT** (:func:`distribute`): every value involved is in the plain lane layout
  (``wi_layout = [1, L], wi_data = [1, 1]``: lane n holds column n, fragment ``[rows, 1]``);
  row slices stay lane-local (sizes ``[n, L]`` -> ``[n, 1]``) and the square's
  ``vector.transpose`` becomes ``xegpu.lane_transpose`` (codegen: ``L - 1`` subgroup shuffles
  with a lane-dependent element choice before and after, codegen/emit/lane_transpose.py).
"""
from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerType, VectorType
from xdsl.ir import Operation, SSAValue

from ...dialects import _asm, xegpu, xetile
from ...dialects._arith_vector import ExtUIOp, TruncIOp
from ...dialects._vector_ops import ExtractStridedSliceOp, InsertStridedSliceOp, TransposeOp
from ...dialects.walk import ops_in
from ...errors import LoweringError
from ...dialects.types import bit_width
from ..analysis.families import Families
from ..analysis.op_kinds import join_elementwise

#: element widths the shuffles move (16-bit widened to 32); 8-bit stays in SLM
REGISTER_BITS = (16, 32)


# --- when ------------------------------------------------------------------------------
def fits_registers(shape, elem, target) -> bool:
    """Whether an ``[R, C]`` value of ``elem`` can be transposed in ``L x L`` register squares
    on ``target``: dims multiples of L, 16/32-bit elements, and the value (as the 32-bit
    words the shuffles move) at most half the default register file. The source blocks
    are all loaded before the first result store (loads do not move past stores), so the
    whole source is live; measured with ocloc, a 64x64 f32 value spills 10 KB on pvc and a
    32x32 f32 (or f16) one 2 KB on dg2-g10, while 32x32 f32 on pvc and 32x16 f32 / 16x32
    f16 on dg2-g10 do not: those and larger values take the SLM path."""
    lanes = target.subgroup_size
    words = shape[0] * shape[1] * 4 if len(shape) == 2 else 0
    return (len(shape) == 2 and shape[0] % lanes == 0 and shape[1] % lanes == 0
            and bit_width(elem) in REGISTER_BITS and words <= target.grf_count * target.grf_bytes // 2)


def operand_a_roots(fn: func.FuncOp) -> tuple[Families, set[SSAValue]]:
    """Element-wise families (joined as blocking joins them) that reach operand A of a tile_mma."""
    families = Families(fn)
    join_elementwise(families, fn)
    roots = {families.find(op.a) for op in ops_in(fn) if isinstance(op, xetile.TileMMAOp)}
    return families, roots


def register_transposable(op: xetile.TileTransposeOp, target, a_roots: tuple[Families, set]) -> bool:
    """The register path applies to ``op`` (shape, width, size, and no operand A on either side)."""
    families, roots = a_roots
    return (fits_registers(tuple(op.source.type.get_shape()), op.source.type.element_type, target)
            and families.find(op.source) not in roots and families.find(op.result) not in roots)


# --- blocking ----------------------------------------------------------------------------
def unpack_around(fn: func.FuncOp) -> None:
    """After blocking retyped a transpose's source and result to 4-D: keep ``tile_transpose``
    2-D (the RFC gives it no 4-D form) between a ``tile_unpack`` of the source blocks and a
    ``tile_pack`` into the result's blocks."""
    for op in [o for o in ops_in(fn) if isinstance(o, xetile.TileTransposeOp)]:
        src_t, res_t = op.source.type, op.result.type
        if len(src_t.get_shape()) != 4:
            continue
        unpack = xetile.TileUnpackOp(op.source, src_t.get_shape()[2:])
        rows, cols = unpack.result.type.get_shape()
        flat = xetile.TileTransposeOp(unpack.result, [1, 0], VectorType(src_t.element_type, [cols, rows]))
        pack = xetile.TilePackOp(flat.result, res_t.get_shape()[2:], res_t)
        for new in (unpack, flat, pack):
            new.location = op.location
        op.parent_block().insert_ops_before([unpack, flat, pack], op)
        op.result.replace_all_uses_with(pack.result)
        op.parent_block().erase_op(op)


# --- XeTile -> XeGPU -------------------------------------------------------------------
# A 2-D value between tile_unpack and tile_pack maps to its blocks, row-major, of
# ``tr.block_shapes[value]`` (the unpacked source's blocks; L x L squares after the transpose).
def unpack_to_xegpu(tr, op) -> None:
    _, _, b0, b1 = op.source.type.get_shape()
    tr.vmap[op.result] = list(tr.vmap[op.source])
    _block_shapes(tr)[op.result] = (b0, b1)


def transpose_to_xegpu(tr, op: xetile.TileTransposeOp) -> None:
    """Each ``L x L`` square of the source, joined from (or cut out of) its blocks and
    transposed with ``vector.transpose``; square ``(p, q)`` of the source is square ``(q, p)``
    of the result."""
    shapes = _block_shapes(tr)
    if op.source not in shapes:
        raise LoweringError("tile_transpose in registers expects its source from tile_unpack (xetile-blocking)", op)
    bs, lanes = shapes[op.source]
    rows, cols = op.source.type.get_shape()
    if _incommensurate(bs, lanes):
        raise LoweringError(f"tile_transpose in registers needs source blocks of b x L, b dividing or a "
                            f"multiple of L; got {bs}x{lanes}", op)
    elem, src = op.source.type.element_type, tr.vmap[op.source]
    gc = cols // lanes
    # in the result's row-major order, so a packed pair is used together (e.g. one DPAS K step)
    joined = [join_rows(tr, op, src[q::gc], bs, p * lanes, lanes, lanes, elem)
              for q in range(gc) for p in range(rows // lanes)]
    tr.vmap[op.result] = _transpose_squares(tr, op, joined, elem)
    shapes[op.result] = (lanes, lanes)


def _transpose_squares(tr, like, squares: list[SSAValue], elem) -> list[SSAValue]:
    """``vector.transpose`` of each square; 16-bit squares two at a time, packed into the
    low and high halves of 32-bit words (one shuffle moves both), an odd last one alone."""
    out = []
    if bit_width(elem) == 16:
        for a, b in zip(squares[0::2], squares[1::2]):
            out += _packed_pair_transpose(tr, like, a, b)
    if len(out) < len(squares):
        out += [tr.emit(TransposeOp(sq, [1, 0]), like).result for sq in squares[len(out):]]
    return out


def _packed_pair_transpose(tr, like, a: SSAValue, b: SSAValue) -> list[SSAValue]:
    """``[a^T, b^T]`` through one transpose of ``a | b << 16`` (i32 words)."""
    shape, elem = a.type.get_shape(), a.type.element_type
    i16, i32 = VectorType(IntegerType(16), shape), VectorType(IntegerType(32), shape)
    emit = lambda o: tr.emit(o, like).results[0]  # noqa: E731
    sixteen = emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(i32, [16])))
    bits = [x if elem == IntegerType(16) else emit(arith.BitcastOp(x, i16)) for x in (a, b)]
    low, high = (emit(ExtUIOp(x, i32)) for x in bits)
    words = emit(arith.OrIOp(low, emit(arith.ShLIOp(high, sixteen))))
    moved = emit(TransposeOp(words, [1, 0]))
    halves = [emit(TruncIOp(moved, i16)), emit(TruncIOp(emit(arith.ShRUIOp(moved, sixteen)), i16))]
    return [h if elem == IntegerType(16) else emit(arith.BitcastOp(h, VectorType(elem, shape))) for h in halves]


def pack_to_xegpu(tr, op) -> None:
    """The result blocks, cut out of (or joined from) the transposed squares."""
    shapes = _block_shapes(tr)
    rows_in, lanes = shapes[op.source]
    rr, rc, br, bc = op.result.type.get_shape()
    if bc != lanes or _incommensurate(br, lanes):
        raise LoweringError(f"tile_pack after a register transpose needs result blocks of b x {lanes}, b dividing "
                            f"or a multiple of {lanes}; got {br}x{bc}", op)
    elem, squares = op.source.type.element_type, tr.vmap[op.source]
    out = []
    for i in range(rr):
        for j in range(rc):
            out.append(join_rows(tr, op, squares[j::rc], rows_in, i * br, br, lanes, elem))
    tr.vmap[op.result] = out


def _block_shapes(tr) -> dict:
    if not hasattr(tr, "register_block_shapes"):
        tr.register_block_shapes = {}
    return tr.register_block_shapes


def _incommensurate(b: int, lanes: int) -> bool:
    return b % lanes != 0 and lanes % b != 0


def join_rows(tr, like, column: list[SSAValue], block_rows: int, r0: int, n: int, lanes: int, elem) -> SSAValue:
    """Rows ``r0 .. r0 + n`` of a block column (blocks of ``block_rows x lanes``) as one
    ``n x lanes`` vector: a block itself, a slice of one, or several joined."""
    k = r0 // block_rows
    if n == block_rows:
        return column[k]
    if n < block_rows:
        return tr.emit(ExtractStridedSliceOp(column[k], [r0 % block_rows, 0], [n, lanes]), like).result
    vtype = VectorType(elem, [n, lanes])
    acc = tr.emit(arith.ConstantOp(_zeros(vtype)), like).result
    for m in range(n // block_rows):
        acc = tr.emit(InsertStridedSliceOp(column[k + m], acc, [m * block_rows, 0]), like).result
    return acc


def _zeros(vtype: VectorType) -> DenseIntOrFPElementsAttr:
    """A splat zero (what the joined rows overwrite; codegen folds it away)."""
    return DenseIntOrFPElementsAttr.from_list(vtype, [0 if isinstance(vtype.element_type, IntegerType) else 0.0])


# --- XeGPU -> SIMT -----------------------------------------------------------------------
def distribute(dist, fn: func.FuncOp, skip: set = frozenset()) -> None:
    """After the SIMT pass gave every value its fragment: row slices become fragment row
    slices and each square transpose an ``xegpu.lane_transpose`` (plain layouts only).
    ``skip``: slices already distributed (blocks of coalesced loads, block_messages.py)."""
    for op in ops_in(fn):
        if op in skip:
            continue
        if isinstance(op, (ExtractStridedSliceOp, InsertStridedSliceOp)):
            _check_plain(dist, op)
            _slice_to_simt(op, dist.target.subgroup_size)
        elif isinstance(op, TransposeOp):
            _check_plain(dist, op)
            lanes = dist.target.subgroup_size
            if tuple(op.vector.type.get_shape()) != (lanes, 1):
                raise LoweringError(f"vector.transpose in registers transposes {lanes}x{lanes} blocks on "
                                    f"{dist.target.name} (one column per lane); cut other shapes into such squares",
                                    op)
            new = xegpu.LaneTransposeOp(op.vector)
            new.location = op.location
            op.parent_block().insert_op_before(new, op)
            op.result.replace_all_uses_with(new.result)
            op.parent_block().erase_op(op)


def _check_plain(dist, op: Operation) -> None:
    """Each vector of the op holds one column per lane (``[rows, 1]`` fragments)."""
    for v in list(op.operands) + list(op.results):
        shape = v.type.get_shape()
        role = dist._role_of(v)
        plain = dist._sg_map(role, v.type.element_type, v) == dist._sg_map("C", v.type.element_type)
        if not plain or len(shape) != 2 or shape[1] != 1:
            raise LoweringError(f"{op.name} in registers needs the plain lane layout (one block column per lane) "
                                f"on every value; {v.type} here is in the {role} layout of "
                                f"{dist.target.name}", op)


def _slice_to_simt(op, lanes: int) -> None:
    """Row slices of whole-width (``L``-column) blocks: offsets stay, sizes become ``[n, 1]``."""
    offsets = _asm.as_int_list(op.offsets)
    sizes = _asm.as_int_list(op.sizes) if isinstance(op, ExtractStridedSliceOp) else [0, lanes]
    if offsets[1] != 0 or sizes[1] != lanes:
        raise LoweringError(f"{op.name}: only row slices of whole {lanes}-column blocks are distributed over "
                            f"lanes", op)
    if isinstance(op, ExtractStridedSliceOp):
        op.properties["sizes"] = _asm.int_array([sizes[0], 1])
