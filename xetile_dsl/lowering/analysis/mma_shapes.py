"""The shapes tile_mma's operands must have on a target: operand A is split into DPAS
``M x K`` blocks, operand B into ``K x N`` blocks (the DPAS and 2D-block sizes of its
element type), so each operand's shape must be a multiple of its blocks.

One rule, called by the compiler's blocking pass (``xetile-blocking``, per family of
values an operand is computed from) and by the interpreter before it runs a kernel (per
tile_mma), so that both refuse the same kernels with the same located message.
"""
from __future__ import annotations

from xdsl.ir import SSAValue

from ...dialects import xetile
from ...errors import LoweringError
from ...dialects.types import type_name
from ...targets import Target

#: what each tile_mma role is called in messages
ROLE_NAMES = {"A": "operand A of tile_mma", "B": "operand B of tile_mma"}


def a_rows(shape, cfg) -> int:
    """Rows of operand A's blocks: the DPAS's largest repeat count ``cfg.m`` (a target
    fact), or a smaller one it allows when the whole tile has fewer rows (M = 1, 2, 4: no
    DPAS work spent on padding rows)."""
    rows = shape[0] if len(shape) == 2 else cfg.m
    return rows if rows < cfg.m and rows in cfg.m_values else cfg.m


def owner_op(value: SSAValue, fallback):
    """The op that defines ``value`` (where its errors are reported), else ``fallback``."""
    owner = value.owner
    return owner if hasattr(owner, "location") and not hasattr(owner, "args") else fallback


def shape_error(shape, name: str, what: str, blocks, target: Target, where, fewer=()) -> LoweringError:
    """The located error for a tile of ``shape`` that ``blocks`` do not divide; ``fewer``:
    the smaller row counts operand A may have instead (the DPAS repeat counts)."""
    hint = f" (or, with fewer rows, have {' or '.join(map(str, fewer))} rows: the DPAS repeat counts)" if fewer else ""
    return LoweringError(
        f"tile {'x'.join(map(str, shape))}x{name} cannot be used as {what} on {target.name}: it is "
        f"split into {blocks[0]}x{blocks[1]} blocks (the DPAS and 2D-block sizes for {name}), so its shape "
        f"must be a multiple of [{blocks[0]}, {blocks[1]}]{hint}", where)


def operand_blocks(role: str, shape, name: str, target: Target, op, where) -> tuple[int, int]:
    """The blocks of a tile_mma operand (``role`` "A" or "B") of ``shape`` and element type
    ``name`` on ``target``; a LoweringError at ``op`` when ``name`` cannot feed tile_mma
    there, at ``where`` when the blocks do not divide ``shape``."""
    cfg = target.dpas_for(name, name)
    if cfg is None:
        raise LoweringError(f"{name} tiles cannot feed tile_mma on {target.name}; legal inputs: "
                            f"{', '.join(target.legal_mma_inputs())}", op)
    blocks = (a_rows(shape, cfg), cfg.k) if role == "A" else (cfg.k, cfg.n)
    if len(shape) != 2 or shape[0] % blocks[0] or shape[1] % blocks[1]:
        fewer = [m for m in cfg.m_values if m < blocks[0]] if role == "A" else []
        raise shape_error(shape, name, ROLE_NAMES[role], blocks, target, where, fewer)
    return blocks


def check_tile_mma(op: xetile.TileMMAOp, target: Target) -> None:
    """LoweringError unless ``op``'s operands have shapes the compiler blocks on ``target``
    (:func:`operand_blocks`), located at the op defining the operand."""
    for role, operand in (("A", op.a), ("B", op.b)):
        operand_blocks(role, tuple(operand.type.get_shape()), type_name(operand.type.element_type), target, op,
                       owner_op(operand, op))
