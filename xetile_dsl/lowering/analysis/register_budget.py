"""The register budget of workgroup-level tile_mma (checked in ``xetile-wg-to-sg``), and
the limit on any tile value one subgroup holds (:func:`check_subgroup_tiles`).

Each subgroup keeps its pieces of every tile_mma accumulator in registers for the whole
K loop, and the A and B values of one DPAS next to them: one DPAS K block of operands
loaded from global memory (xegpu-sink-to-uses keeps each load next to its DPAS), the
whole K step of operands from SLM or computed.  The budget is
``Target.accumulator_register_share`` of the largest register file
(``large_grf_count x grf_bytes``, the 256-GRF mode): :func:`budget_bytes`.  Over it:

* when the K loop can be run several times (no stores, atomics or SLM exchanges in it),
  xegpu-split-accumulators splits it into :func:`split_parts` copies, each over a group
  of accumulator block rows: a located :class:`AccumulatorSplitNote` (a performance
  note users can filter) says so and names the sg_data that would need no split;
* a loop that cannot be split, with accumulators alone larger than the register file,
  or a splittable one where even one DPAS block row does not fit: a located error;
* a loop that cannot be split, whose accumulators and operands fill the whole register
  file: a located "will spill" warning.  Both name the largest result sg_data that fits.

Whether the lowered loop can run twice is only known after wg-to-sg (a tile_transpose or
a reduction may become an SLM exchange inside it).  Loops holding an XeTile memory write
are reported here at once; for the others :func:`check` leaves a verdict
(:data:`REGISTER_BUDGET_ATTR`) on the ``scf.for`` and xegpu-split-accumulators reports it on the
lowered loop (:func:`tell`): the note with the copy count it chose, or the warning/error
of a loop that cannot be split.  :func:`split_parts` only decides the "no split fits"
error here; the pass chooses the count from the exact blocks.

Measured with ocloc (docs/decisions/015-register-budget.md): on
pvc RFC 2.5's 64x64 f32 piece spills 11.5 KB in one loop, none in two; a 32x64 piece
(11 KiB counted, 14 KiB with the whole K step the 2.5 loop keeps live) does not spill.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import DictionaryAttr, StringAttr, VectorType
from xdsl.ir import BlockArgument, SSAValue

from ...dialects import xetile
from ...dialects.walk import ops_in
from ...errors import AccumulatorSplitNote, LoweringError, LoweringWarning
from ...dialects.types import bit_width, type_name
from ...dialects.attributes import REGISTER_BUDGET_ATTR
from ...targets import Target
from .. import notes
from .families import Families


def budget_bytes(target: Target) -> int:
    """Bytes of accumulators + operands of one DPAS a K loop may keep in registers."""
    return int(target.large_grf_count * target.grf_bytes * target.accumulator_register_share)


def _per_subgroup(shape, m: xetile.WgMapAttr | None) -> tuple[int, int]:
    """Elements per dimension one subgroup holds of a ``shape`` value under map ``m``."""
    if m is None:
        return tuple(shape)
    return tuple(max(1, s // (lay * dat)) * dat for s, lay, dat in zip(shape, m.layout, m.data))


def _bytes(rows: int, cols: int, elem) -> int:
    return rows * cols * bit_width(elem) // 8


@dataclass(frozen=True)
class _Piece:
    """One subgroup's share of a tile_mma: accumulator rows x cols, the K step, the DPAS
    K block and whether A / B are loaded straight from global memory."""

    op: xetile.TileMMAOp
    rows: int
    cols: int
    k_step: int
    k_block: int
    a_global: bool
    b_global: bool

    def need(self, rows: int, cols: int) -> tuple[int, int]:
        """(accumulator bytes, + the operands live at one DPAS) of a rows x cols part:
        one DPAS K block of operands loaded from global memory (xegpu-sink-to-uses keeps
        them next to their DPAS), the whole K step of the others (SLM, computed)."""
        op = self.op
        acc = _bytes(rows, cols, op.output.type.element_type)
        a_k = self.k_block if self.a_global else self.k_step
        b_k = self.k_block if self.b_global else self.k_step
        return acc, acc + _bytes(rows, a_k, op.a.type.element_type) + _bytes(b_k, cols, op.b.type.element_type)


def _piece(op: xetile.TileMMAOp, target: Target) -> _Piece:
    rows, cols = _per_subgroup(op.output.type.get_shape(), op.wg_map_c)
    k_step = op.a.type.get_shape()[1]
    cfg = target.dpas_for(type_name(op.a.type.element_type), type_name(op.b.type.element_type))
    k_block = min(cfg.k, k_step) if cfg is not None else k_step
    return _Piece(op, rows, cols, k_step, k_block, _from_global_load(op.a), _from_global_load(op.b))


def _from_global_load(value: SSAValue) -> bool:
    owner = value.owner
    return isinstance(owner, xetile.LoadTileOp) and owner.tile.type.attr.memory_space.data == 0


def split_parts(piece: _Piece, target: Target, budget: int) -> int | None:
    """The number of copies xegpu-split-accumulators makes of the K loop: the smallest
    power of two whose groups of DPAS block rows (then block columns) fit ``budget``;
    None when even one DPAS block does not fit."""
    cfg = target.dpas_for(type_name(piece.op.a.type.element_type), type_name(piece.op.b.type.element_type))
    m, n = (cfg.m, cfg.n) if cfg is not None else (piece.rows, piece.cols)
    row_blocks, col_blocks = max(1, piece.rows // m), max(1, piece.cols // n)
    parts = 1
    while parts <= row_blocks * col_blocks:
        row_parts = min(parts, row_blocks)
        rows, cols = piece.rows // row_parts, piece.cols // (parts // row_parts)
        if piece.need(rows, cols)[1] <= budget:
            return parts
        parts *= 2
    return None


def _fitting_piece(piece: _Piece, budget: int, block_rows: int) -> tuple[int, int] | None:
    """The piece got by halving the larger dimension (rows first, down to one accumulator
    block's ``block_rows``: the DPAS repeat count ``Target.dpas_m``) until it fits."""
    rows, cols = piece.rows, piece.cols
    while piece.need(rows, cols)[1] > budget:
        if rows >= cols and rows > block_rows:
            rows //= 2
        elif cols > 16:
            cols //= 2
        else:
            return None
    return rows, cols


#: scf.for attribute carrying the register budget's verdict on a K loop to
#: xegpu-split-accumulators, which decides on the lowered body (module docstring)
#: XeTile ops that write memory: a K loop holding one is never split
_WRITES = ("xetile.store_tile", "xetile.store_scatter", "xetile.atomic_rmw", "xetile.atomic_rmw_tile", "func.call")


def check(fn: func.FuncOp, target: Target) -> None:
    """Error, warn, or leave a verdict for xegpu-split-accumulators (module docstring) for
    each wg_map tile_mma of ``fn``."""
    budget = budget_bytes(target)
    families, seen = Families(fn), set[SSAValue]()
    for op in ops_in(fn):
        if not isinstance(op, xetile.TileMMAOp) or op.wg_map_c is None:
            continue
        root = families.find(op.output)
        if root in seen:
            continue
        seen.add(root)
        piece = _piece(op, target)
        if piece.need(piece.rows, piece.cols)[1] <= budget:
            continue
        loop = _accumulator_loop(op)
        if loop is None or any(inner.name in _WRITES for inner in ops_in(loop.body)):
            tell(*_unsplittable(piece, target, budget), op)
        elif split_parts(piece, target, budget) is None:
            tell("error", _row_error(piece, target, budget), op)
        else:
            loop.attributes[REGISTER_BUDGET_ATTR] = _verdict(piece, target, budget)


def check_subgroup_tiles(fn: func.FuncOp, target: Target) -> None:
    """A located error for a tile value one subgroup would hold that is far larger than
    its register file (``Target.max_subgroup_tile_bytes``), checked once values are per
    subgroup (after wg-to-sg) and before blocking multiplies its ops."""
    limit = target.max_subgroup_tile_bytes()
    for op in ops_in(fn):
        for result in op.results:
            if isinstance(result.type, VectorType) and _value_bytes(result.type) > limit:
                raise LoweringError(_tile_error(result.type, target, limit), op)


def _value_bytes(ty: VectorType) -> int:
    return math.prod(ty.get_shape()) * bit_width(ty.element_type) // 8


def _tile_error(ty: VectorType, target: Target, limit: int) -> str:
    shape = "x".join(map(str, ty.get_shape()))
    nbytes = _value_bytes(ty)
    full = target.large_grf_count * target.grf_bytes
    return (f"one subgroup would hold a {shape}x{type_name(ty.element_type)} tile = {nbytes} bytes, "
            f"{nbytes / full:g} times {_grf_text(target)}; per-subgroup tiles are limited to {limit} bytes "
            f"({target.subgroup_tile_register_files} register files): distribute the tile over the subgroups of a "
            f"workgroup with a wg_map (sg_layout, sg_data), or loop over smaller tiles (a `range` loop with "
            f"update_tile_offset)")


def tell(severity: str, text: str, op) -> None:
    """Raise (``error``) or warn (``warning``, ``note``: an AccumulatorSplitNote) ``text``
    at ``op``; ``none`` says nothing."""
    if severity == "error":
        raise LoweringError(text, op)
    if severity in ("warning", "note"):
        category = AccumulatorSplitNote if severity == "note" else LoweringWarning
        notes.note(category(text, op))


def _accumulator_loop(op: xetile.TileMMAOp) -> scf.ForOp | None:
    """The scf.for that carries ``op``'s accumulator, if any."""
    acc = op.c
    if isinstance(acc, BlockArgument) and isinstance(acc.owner.parent_op(), scf.ForOp):
        return acc.owner.parent_op()
    return None


def _verdict(piece: _Piece, target: Target, budget: int) -> DictionaryAttr:
    """What xegpu-split-accumulators reports: ``note`` when it splits the loop (``{parts}``
    stands for its copies), ``severity`` + ``unsplit`` when the lowered body cannot run
    twice (an SLM exchange wg-to-sg added), ``row_error`` when no split fits."""
    severity, unsplit = _unsplittable(piece, target, budget)
    return DictionaryAttr({"note": StringAttr(_note(piece, target, budget)), "severity": StringAttr(severity),
                           "unsplit": StringAttr(unsplit), "row_error": StringAttr(_row_error(piece, target, budget))})


def _grf_text(target: Target) -> str:
    full = target.large_grf_count * target.grf_bytes
    return (f"the register file of one {target.name} thread ({target.large_grf_count} GRFs x {target.grf_bytes} bytes "
            f"= {full} bytes in its largest, {target.large_grf_count}-GRF mode)")


def _hint(piece: _Piece, target: Target, budget: int) -> str:
    fit = _fitting_piece(piece, budget, target.dpas_m)
    if fit is None:
        return "use more subgroups (a larger sg_layout) so that each holds a smaller piece"
    layout = piece.op.wg_map_c.layout
    wg = [fit[0] * layout[0], fit[1] * layout[1]]
    return (f"use a result sg_data of at most {list(fit)} (e.g. a {wg[0]}x{wg[1]} workgroup tile with "
            f"sg_layout {list(layout)})")


def _what(piece: _Piece) -> str:
    elem = type_name(piece.op.output.type.element_type)
    acc_bytes = piece.need(piece.rows, piece.cols)[0]
    return f"each subgroup's tile_mma accumulator is {piece.rows}x{piece.cols}x{elem} = {acc_bytes} bytes"


def _operands_text(piece: _Piece) -> str:
    a_k = piece.k_block if piece.a_global else piece.k_step
    b_k = piece.k_block if piece.b_global else piece.k_step
    return f"A and B live at one DPAS ({piece.rows}x{a_k} and {b_k}x{piece.cols})"


def _note(piece: _Piece, target: Target, budget: int) -> str:
    total = piece.need(piece.rows, piece.cols)[1]
    return (f"{_what(piece)}; with the {_operands_text(piece)} that is {total} bytes, more than the "
            f"{budget}-byte accumulator budget of {_grf_text(target)}: the K loop runs in {{parts}} passes "
            f"over 1/{{parts}} of the accumulator each (B is read {{parts}} times); to avoid it "
            f"{_hint(piece, target, budget)}")


def _row_error(piece: _Piece, target: Target, budget: int) -> str:
    return (f"{_what(piece)}: even one DPAS block row of it with the {_operands_text(piece)} does not fit the "
            f"{budget}-byte accumulator budget of {_grf_text(target)}; {_hint(piece, target, budget)}")


def _unsplittable(piece: _Piece, target: Target, budget: int) -> tuple[str, str]:
    """(severity, text) for a K loop that cannot be split: an error when the accumulator
    alone exceeds the register file, a warning when with its operands it fills it."""
    acc_bytes, total = piece.need(piece.rows, piece.cols)
    full = target.large_grf_count * target.grf_bytes
    what, grf, hint = _what(piece), _grf_text(target), _hint(piece, target, budget)
    if acc_bytes > full:
        return "error", (f"{what}, more than {grf}: it cannot be kept in registers, and the K loop cannot be run "
                         f"in several passes because it writes memory; {hint}")
    if total < full:
        return "none", ""
    return "warning", (f"{what}; with the {_operands_text(piece)} that is {total} bytes, which fills {grf}: the "
                       f"kernel will spill registers on {target.name} (the K loop writes memory, so it cannot be "
                       f"run in several passes); {hint}")
