"""The register budget of workgroup-level tile_mma (checked in ``xetile-wg-to-sg``).

Each subgroup keeps its pieces of every tile_mma accumulator in registers for the whole
K loop, and one K step of its A and B pieces next to them.  The largest register file a
thread can have is ``Target.large_grf_count x Target.grf_bytes`` (the 256-GRF mode):

* accumulators alone larger than that cannot be kept in registers at all: a located
  error, which names the largest result ``sg_data`` that fits;
* accumulators plus one K step of A and B that fill it (nothing left for addresses and
  loop state) will spill: a located warning with the same suggestion.

Measured with ocloc (docs/design.md): on pvc a 32x64 f32 piece with 32x32/32x64 f16
operands (14 KiB of 16 KiB) compiles without spills and a 64x64 piece spills 11.5 KB;
on dg2-g10 a 32x32 piece spilled (8 KiB of 8 KiB) until xegpu-sink-to-uses kept only one
DPAS K block of operands live; it no longer does, so the warning is conservative there
(docs/design.md, Known limits).
"""
from __future__ import annotations

import warnings

from xdsl.dialects import func
from xdsl.ir import SSAValue

from ..dialects import xetile
from ..errors import LoweringError, LoweringWarning
from ..frontend.types import bit_width, type_name
from ..targets import Target
from .analysis import Families


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


def _need(acc: tuple[int, int], k: int, op: xetile.TileMMAOp) -> tuple[int, int]:
    """(accumulator bytes, accumulator + one K step of A and B bytes) of a piece."""
    acc_bytes = _bytes(*acc, op.output.type.element_type)
    ops = _bytes(acc[0], k, op.a.type.element_type) + _bytes(k, acc[1], op.b.type.element_type)
    return acc_bytes, acc_bytes + ops


def _fitting_piece(acc: tuple[int, int], k: int, op, budget: int) -> tuple[int, int] | None:
    """The piece got by halving the larger dimension (rows first) until it fits."""
    rows, cols = acc
    while _need((rows, cols), k, op)[1] >= budget:
        if rows >= cols and rows > 8:
            rows //= 2
        elif cols > 16:
            cols //= 2
        else:
            return None
    return rows, cols


def check(fn: func.FuncOp, target: Target) -> None:
    """Error or warn (see the module docstring) for each wg_map tile_mma of ``fn``."""
    budget = target.large_grf_count * target.grf_bytes
    families, seen = Families(fn), set[SSAValue]()
    for op in fn.walk():
        if not isinstance(op, xetile.TileMMAOp) or op.wg_map_c is None:
            continue
        root = families.find(op.output)
        if root in seen:
            continue
        seen.add(root)
        m = op.wg_map_c
        acc = _per_subgroup(op.output.type.get_shape(), m)
        k = op.a.type.get_shape()[1]
        acc_bytes, total = _need(acc, k, op)
        if total < budget:
            continue
        _report(op, target, m, acc, k, acc_bytes, total, budget)


def _report(op, target, m, acc, k, acc_bytes, total, budget) -> None:
    elem = type_name(op.output.type.element_type)
    grf = (f"the register file of one {target.name} thread ({target.large_grf_count} GRFs x {target.grf_bytes} bytes "
           f"= {budget} bytes in its largest, {target.large_grf_count}-GRF mode)")
    piece = _fitting_piece(acc, k, op, budget)
    if piece is None:
        hint = "use more subgroups (a larger sg_layout) so that each holds a smaller piece"
    else:
        wg = [piece[0] * m.layout[0], piece[1] * m.layout[1]]
        hint = (f"use a result sg_data of at most {list(piece)} (e.g. a {wg[0]}x{wg[1]} workgroup tile with "
                f"sg_layout {list(m.layout)})")
    what = f"each subgroup's tile_mma accumulator is {acc[0]}x{acc[1]}x{elem} = {acc_bytes} bytes"
    if acc_bytes > budget:
        raise LoweringError(f"{what}, more than {grf}: it cannot be kept in registers; {hint}", op)
    warnings.warn(LoweringWarning(
        f"{what}; with one K step of A and B ({acc[0]}x{k} and {k}x{acc[1]}) that is {total} bytes, which fills "
        f"{grf}: the kernel will spill registers on {target.name}; {hint}", op), stacklevel=2)
