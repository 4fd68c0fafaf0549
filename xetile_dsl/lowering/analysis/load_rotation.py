"""What xegpu-rotate-loads may do to a K loop, and what the register file holds
(read-only; the rewrite is lowering/passes/rotate_loads.py).

Two K steps per trip (the default) keep two steps of loaded operands live next to the
loop's carried values (its accumulators): :func:`pair_fits` asks that their sum stay
within ``Target.accumulator_register_share`` of the register file of the kernel's own
GRF mode (the ``xetile.large_grf`` mark of xetile-wg-to-sg, or a target that builds
every kernel in the large mode), so the pass never pushes a kernel into spills or into
another GRF mode.  The RFC 2.1 piece (32x64 f32 = 8 KiB + 2 x 6 KiB of operands in 16
KiB) has no room, nor have the 32x16 and 32x32 pieces of 128 GRFs; a 16x16 small-M
piece has (5 of 8 KiB).

A load is *rotated* (carry mode) when the loop carries its value: the first tile is
loaded before the loop and each step loads the next tile before the DPAS that use the
current one.  The last step then loads one step past the loop's range, and the loads of
step k + 1 move in front of the rest of step k.  Both are safe only under the
conditions :func:`candidates` checks:

* the loaded descriptor is an iter_arg whose yielded value is an ``update_nd_offset`` of
  itself (the next tile is known at the top of the body);
* the load is a 2D block load (``load_nd`` of a block descriptor) from **global** memory
  with ``boundary_check`` on: rows and columns outside the surface read as zero (or the
  load's padding) and never fault, on the hardware and in codegen's CPU definitions and
  ARC's guarded row path alike.  Per-lane gathers and SLM blocks could fault or read
  another buffer one step past the range; they are never rotated;
* nothing in the loop writes memory, synchronises or holds a region (every op is
  side-effect-free but for prefetches): a load moved in front of the rest of its
  previous step cannot then miss a write.

A rotated load's value is live twice (the tile in use and the next one), so rotating
adds its bytes once more: :func:`within_budget` takes loads in body order while the
loop's count (carried values + every value loaded per step) stays within the same share.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, VectorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from ...dialects import xegpu
from ...dialects.attributes import LANE_ROWS_ATTR
from ...dialects.types import bit_width
from ...targets import Target
from ..rewrites.dead_code import is_pure
#: op attribute (an integer) xegpu-rotate-loads puts on the loads of one rotated tile
#: that write the same registers: the load before the loop and the next-tile load of
#: the second step (codegen/emit/message_pieces.py keeps their fragment in one array)

@dataclass(frozen=True)
class Rotation:
    """One load to rotate: ``load`` reads iter_arg ``position`` (the descriptor), whose
    next value ``update`` computes in the body."""

    load: xegpu.LoadNdOp
    position: int
    update: xegpu.UpdateNdOffsetOp


def first_dpas(loop: scf.ForOp) -> xegpu.DpasOp | None:
    """The first DPAS at the top level of ``loop``'s body (None: not a K loop)."""
    return next((op for op in loop.body.block.ops if isinstance(op, xegpu.DpasOp)), None)


def candidates(loop: scf.ForOp) -> list[Rotation]:
    """The loads of ``loop`` that may be rotated (module docstring), in body order; none
    when the loop has no DPAS or holds an op that writes, synchronises or has a region."""
    if first_dpas(loop) is None or not writes_nothing(loop):
        return []
    found = []
    for op in loop.body.block.ops:
        rotation = _rotation_of(op, loop) if isinstance(op, xegpu.LoadNdOp) else None
        if rotation is not None:
            found.append(rotation)
    return found


def constant_step(loop: scf.ForOp) -> int | None:
    """The loop's step when it is an integer constant (the unrolled loop steps twice it)."""
    owner = loop.step.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def writes_nothing(loop: scf.ForOp) -> bool:
    """Whether every op of ``loop``'s body is side-effect-free (reads allowed) or a prefetch."""
    body = loop.body.block
    return all(_repeat_safe(op) for op in body.ops if op is not body.last_op)


def _repeat_safe(op: Operation) -> bool:
    """Side-effect-free (reads allowed) or a prefetch."""
    return is_pure(op) or op.name.startswith("xegpu.prefetch")


def _rotation_of(load: xegpu.LoadNdOp, loop: scf.ForOp) -> Rotation | None:
    body = loop.body.block
    desc = load.tensor_desc
    if not (isinstance(desc, BlockArgument) and desc.block is body and desc.index >= 1):
        return None
    ty = desc.type
    if ty.is_scattered or ty.memory_space != "global" or not ty.block_attr.checks_bounds:
        return None
    position = desc.index - 1
    update = body.last_op.operands[position].owner
    if not (isinstance(update, xegpu.UpdateNdOffsetOp) and update.tensor_desc is desc and update.parent_block() is body):
        return None
    if not all(_available_early(v, body) for v in update.offsets):
        return None
    return Rotation(load, position, update)


def _available_early(value: SSAValue, body: Block) -> bool:
    """Whether ``value`` can be computed at the top of ``body``: defined outside it, a
    block argument, or a pure op of it (not a load) whose operands are."""
    owner = value.owner
    if isinstance(value, BlockArgument) or owner.parent_block() is not body:
        return True
    if not is_pure(owner) or isinstance(owner, (xegpu.LoadNdOp, xegpu.LoadGatherOp, xegpu.DpasOp)):
        return False
    return all(_available_early(v, body) for v in owner.operands)


def register_file_bytes(target: Target, large_grf: bool) -> int:
    """Bytes of one subgroup's register file in the kernel's GRF mode (``large_grf``: the
    kernel asks for the large mode; some targets build every kernel in it)."""
    large = large_grf or target.large_grf_option in target.build_options.split()
    return (target.large_grf_count if large else target.grf_count) * target.grf_bytes


def value_bytes(value: SSAValue, lanes: int) -> int:
    """Bytes a subgroup holds of ``value`` (per-lane SIMT vectors times ``lanes``)."""
    ty = value.type
    if not isinstance(ty, VectorType):
        return 0
    return prod(ty.get_shape()) * bit_width(ty.element_type) // 8 * lanes


def loop_bytes(loop: scf.ForOp, lanes: int) -> int:
    """Registers the K loop needs unrotated: its carried vectors (accumulators) and every
    value it loads per iteration."""
    carried = sum(value_bytes(arg, lanes) for arg in loop.body.block.args[1:])
    loaded = sum(value_bytes(op.results[0], lanes) for op in loop.body.block.ops
                 if isinstance(op, (xegpu.LoadNdOp, xegpu.LoadGatherOp)))
    return carried + loaded


def plain_loads(loop: scf.ForOp) -> bool:
    """Whether every load of ``loop``'s body is a 2D block load without ``transpose``.
    Transposed reads go through payloads codegen hoists per loop (codegen/
    transposed_payloads.py) that a second step does not share: paired, the pvc A^T.B
    M = 16 loop went from 58 to 62.5 instructions per step, A.B^T M = 1 from 32 to 34.5.
    Except transposed loads read with per-lane row loads (``LANE_ROWS_ATTR``: ARC, no
    payloads), as a row-major GEMM's loop is on ARC (lowering/passes/wg_to_sg/operand_swap.py)."""
    loads = [op for op in loop.body.block.ops if isinstance(op, (xegpu.LoadNdOp, xegpu.LoadGatherOp))]
    return all(isinstance(op, xegpu.LoadNdOp) and (op.transpose is None or LANE_ROWS_ATTR in op.attributes)
               for op in loads)


def pair_fits(loop: scf.ForOp, target: Target, large_grf: bool) -> bool:
    """Whether two steps of ``loop``'s loaded operands and its carried values fit
    ``accumulator_register_share`` of the register file of the kernel's GRF mode.

    Measured with ocloc on pvc (docs/decisions/021-code-shaped-for-igc.md): at 100% of
    the file (a 32x16 or 32x32 f32 piece with its operands in 128 GRFs) IGC puts the
    second step's A load after the first step's DPAS, into the same registers, so the
    pairing gains nothing; at 62% (16x16, BK 32) all loads go ahead."""
    lanes = target.subgroup_size
    loaded = sum(value_bytes(op.results[0], lanes) for op in loop.body.block.ops
                 if isinstance(op, (xegpu.LoadNdOp, xegpu.LoadGatherOp)))
    limit = register_file_bytes(target, large_grf) * target.accumulator_register_share
    return loop_bytes(loop, lanes) + loaded <= limit


def within_budget(loop: scf.ForOp, found: list[Rotation], target: Target, large_grf: bool) -> list[Rotation]:
    """The rotations of ``found`` taken in body order, each while its second copy still
    fits ``accumulator_register_share`` of the kernel's register file (a load too large
    is passed over, a later smaller one may still fit)."""
    lanes = target.subgroup_size
    limit = register_file_bytes(target, large_grf) * target.accumulator_register_share
    need = loop_bytes(loop, lanes)
    chosen = []
    for rotation in found:
        extra = value_bytes(rotation.load.results[0], lanes)
        if need + extra <= limit:
            need += extra
            chosen.append(rotation)
    return chosen
