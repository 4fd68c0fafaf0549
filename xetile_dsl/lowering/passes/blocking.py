"""Pass ``xetile-blocking``: give every tile ``inner_blocks`` sized for the target and turn
2-D tile values into 4-D blocked vectors (the XeTile RFC, "Internal Operations to
support gradual lowering").

Block sizes come from the target: operand A of tile_mma is blocked by the DPAS M x K,
operand B by K x N, accumulators and other tiles by M x subgroup-size (M: the target's
largest DPAS repeat count, ``Target.dpas_m``), so that each block is one DPAS operand and
one 2D-block message.
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp, VectorType
from xdsl.ir import Attribute, SSAValue
from xdsl.passes import ModulePass

from ...dialects import _asm, retype, xetile
from ...dialects.walk import ops_in
from ...errors import LoweringError
from ...dialects.types import bit_width, type_name
from ...targets import Target, as_target
from ..analysis import mma_shapes, op_kinds
from ..analysis.families import Families
from ..analysis.unlowered import reject_unlowered
from ..rewrites import constants, mma_relayout, register_transpose, scattered


@dataclass(frozen=True)
class XeTileBlocking(ModulePass):
    name = "xetile-blocking"
    target: Target | str = "pvc"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        reject_unlowered(op, self.name)
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and has_xetile_ops(fn):
                _BlockFunction(fn, as_target(self.target)).run()


def has_xetile_ops(fn: func.FuncOp) -> bool:
    """Whether ``fn`` is still at XeTile level; a kernel written in XeGPU (its vectors
    already subgroup-sized, e.g. the 1-D offsets of a scattered descriptor) has nothing
    to block."""
    return any(op.name.startswith("xetile.") for op in ops_in(fn))


class _BlockFunction:
    def __init__(self, fn: func.FuncOp, target: Target):
        self.fn, self.target = fn, target
        self.families = Families(fn)
        self.elementwise = op_kinds.join_elementwise(self.families, fn)
        self.roles: dict[SSAValue, tuple[str, object]] = {}  # family root -> (role, op that decided it)
        # tile_mma op -> its operands ("A", "B") computed from another's result: kept in result
        # blocks and re-laid out before it (mma_relayout)
        self.relaid = mma_relayout.relaid_operands(fn, self.families, target)
        # (type, block shape) -> blocked type: the values of a family share them, and a
        # tile type costs ~100 us to build
        self._blocked: dict[tuple, Attribute] = {}

    def run(self) -> None:
        self._assign_roles()
        blocks = {root: self._blocks_for(root, role, op) for root, (role, op) in self.roles.items()}
        self._block_broadcast_sources(blocks)
        self._block_reduce_results(blocks)
        self._check_chained_mma(blocks)
        for op in ops_in(self.fn):
            for value in list(op.results) + [a for r in op.regions for b in r.blocks for a in b.args]:
                self._retype(value, blocks)
        self._check_stores(blocks)
        mma_relayout.insert_relayout(self.relaid, self.target)
        op_kinds.blocked_dims(self.fn)
        register_transpose.unpack_around(self.fn)

    # --- roles ---------------------------------------------------------------------
    #: which role decides a family's blocking when several apply (S: scattered, 1 x sg)
    _PRIORITY = {"A": 3, "B": 3, "S": 2, "C": 1, "P": 1}

    def _set_role(self, value: SSAValue, role: str, op) -> None:
        root = self.families.find(value)
        if root not in self.roles or self._PRIORITY[role] > self._PRIORITY[self.roles[root][0]]:
            self.roles[root] = (role, op)

    def _assign_roles(self) -> None:
        for op in ops_in(self.fn):
            if isinstance(op, xetile.TileMMAOp):
                for operand, role in ((op.a, "A"), (op.b, "B")):
                    if role in self.relaid.get(op, ()):
                        continue  # blocked like the result it is computed from (mma_relayout)
                    self._set_role(operand, role, op)
                    if isinstance(operand.owner, xetile.LoadTileOp):
                        self._set_role(operand.owner.tile, role, op)
                self._set_role(op.output, "C", op)
        for op in ops_in(self.fn):
            if isinstance(op, (xetile.LoadTileOp, xetile.StoreTileOp)):
                self._set_role(op.tile, "C", op)
                self._set_role(op.value, "C", op)
            elif isinstance(op, scattered.SCATTER_OPS):
                if scattered.is_scattered(op.tile.type):
                    scattered.check_shape(op.tile.type, self.target.subgroup_size, op)
                role = "S" if scattered.is_scattered(op.tile.type) else "C"
                for v in [op.tile] + scattered.values_of(op):
                    self._set_role(v, role, op)
            elif isinstance(op, xetile.InitTileOp) and scattered.is_scattered(op.tile.type):
                self._set_role(op.offsets[0], "S", op)
            elif isinstance(op, xetile.TileTransposeOp):  # in registers: both sides one column per lane
                self._set_role(op.source, "C", op)
                self._set_role(op.result, "C", op)
            elif isinstance(op, xetile.PrefetchTileOp):
                self._set_role(op.tile, "P", op)
            elif isinstance(op, arith.ConstantOp) and isinstance(op.result.type, VectorType):
                self._set_role(op.result, "C", op)
            elif op_kinds.is_vector_source(op):
                self._set_role(op.results[0], "C", op)
        for op in ops_in(self.fn):  # a block tile whose values are scattered ones: same 1 x sg rows
            if isinstance(op, (xetile.LoadTileOp, xetile.StoreTileOp)) \
                    and self.roles.get(self.families.find(op.value), ("C",))[0] == "S":
                self._set_role(op.tile, "S", op)

    # --- block sizes ---------------------------------------------------------------
    def _blocks_for(self, root: SSAValue, role: str, op) -> tuple[int, int]:
        t = root.type
        shape, elem = tuple(t.get_shape()), t.element_type
        sg = self.target.subgroup_size
        name = type_name(elem)
        if role in ("A", "B"):
            if isinstance(op, xetile.TileMMAOp):  # an astype before tile_mma: block for the mma's type
                name = type_name((op.a if role == "A" else op.b).type.element_type)
            # the rule the interpreter checks too (mma_shapes)
            return mma_shapes.operand_blocks(role, shape, name, self.target, op, mma_shapes.owner_op(root, op))
        if role == "S":
            blocks = scattered.BLOCK_ROWS, sg  # one offset per lane, row by row
        else:
            blocks = op_kinds.c_blocks(shape, bit_width(elem), sg, root in self.elementwise, self.target.dpas_m)
        blocks = (min(blocks[0], shape[0]) if role in ("C", "P") else blocks[0], blocks[1])
        if len(shape) != 2 or shape[0] % blocks[0] or shape[1] % blocks[1]:
            raise mma_shapes.shape_error(shape, name, "a tile", blocks, self.target, mma_shapes.owner_op(root, op))
        return blocks

    def _block_broadcast_sources(self, blocks: dict) -> None:
        """A broadcast row (column) is blocked like its result along the dim it keeps: a bias
        row added to operand A (M x K blocks) has 1 x K blocks, a scale column multiplied
        into operand B (K x N blocks) K x 1 ones, not the 1 x lanes / M x 1 of a plain
        value, which the per-block broadcast could not stretch. The tiles the row is
        loaded from or stored to follow."""
        for op in ops_in(self.fn):
            if not isinstance(op, xetile.TileBroadcastOp):
                continue
            src, res = self.families.find(op.source), self.families.find(op.result)
            if src not in blocks or res not in blocks or self.roles[src][0] != "C":
                continue
            shape = tuple(op.source.type.get_shape())
            want = tuple(1 if n == 1 else b for n, b in zip(shape, blocks[res]))
            if blocks[src] == want or any(n % w for n, w in zip(shape, want)):
                continue
            for root in [src] + self._tiles_of(src):
                blocks[root] = want

    def _block_reduce_results(self, blocks: dict) -> None:
        """A reduction's result is blocked like its source along the dim it keeps (one
        result block per block row or column of the source: the per-block reduction
        makes no other), 1 along the reduced dim: a row sum of a gather's 1 x lanes
        blocks has 1 x 1 blocks, not the M x 1 of a plain column (M: ``Target.dpas_m``).
        The tiles the result is stored to follow."""
        for op in ops_in(self.fn):
            if not isinstance(op, xetile.TileReduceOp):
                continue
            src, res = self.families.find(op.source), self.families.find(op.result)
            if src not in blocks or res not in blocks or self.roles[res][0] != "C":
                continue
            dims = set(_asm.as_int_list(op.reduction_dims))
            want = tuple(1 if d in dims else b for d, b in enumerate(blocks[src]))
            shape = tuple(op.result.type.get_shape())
            if blocks[res] == want or len(shape) != 2 or any(n % w for n, w in zip(shape, want)):
                continue
            for root in [res] + self._tiles_of(res):
                blocks[root] = want

    def _tiles_of(self, value_root: SSAValue) -> list[SSAValue]:
        """Family roots of the tiles that values of family ``value_root`` are loaded from or stored to."""
        return [self.families.find(op.tile) for op in ops_in(self.fn)
                if isinstance(op, (xetile.LoadTileOp, xetile.StoreTileOp))
                and self.families.find(op.value) is value_root]

    def _check_chained_mma(self, blocks: dict) -> None:
        """A tile_mma result that feeds another tile_mma as an operand keeps one blocking;
        it must be the DPAS result shape M x N, or the products would not line up (16-bit
        operands A that differ, on ARC, and operands B were re-laid out: lowering/rewrites/mma_relayout.py)."""
        for op in ops_in(self.fn):
            if not isinstance(op, xetile.TileMMAOp):
                continue
            a_name, b_name = (type_name(v.type.element_type) for v in (op.a, op.b))
            cfg = self.target.dpas_for(a_name, b_name)
            got = blocks.get(self.families.find(op.output))
            role, by = self.roles[self.families.find(op.output)]
            if cfg is None or got is None or got == (cfg.m, cfg.n) or role == "C":
                continue
            if role == "S" and isinstance(by, scattered.SCATTER_OPS):
                raise LoweringError(
                    f"store_tile: this mask stores a tile_mma result per lane, in one-row pieces, unlike the "
                    f"{cfg.m}x{cfg.n} DPAS result blocks on {self.target.name}; mask only the rows "
                    f"(offs_m[:, None] < M keeps the block store: columns past the array's end are already "
                    f"dropped) or store it without a mask", by)
            raise LoweringError(
                f"this tile_mma's result feeds another tile_mma as an operand: on {self.target.name} its "
                f"{cfg.m}x{cfg.n} result blocks are laid out across the {self.target.subgroup_size} lanes unlike "
                f"{got[0]}x{got[1]} operand blocks, and only operand B and a 16-bit operand A are re-laid out in "
                f"registers; store the result (e.g. to SLM with xt.slm_alloc) and load it back as the operand", op)

    def _retype(self, value: SSAValue, blocks: dict) -> None:
        root = self.families.find(value)
        if root not in blocks:
            return
        b0, b1 = blocks[root]
        t = value.type
        if isinstance(t, xetile.TileType) and not t.attr.blocks:
            retype(value, self._blocked_type(t, b0, b1))
        elif isinstance(t, VectorType) and len(t.get_shape()) == 2:
            new = self._blocked_type(t, b0, b1)
            owner = value.owner
            if isinstance(owner, arith.ConstantOp):
                constants.retype_blocked(owner, new, b0, b1)
            retype(value, new)

    def _blocked_type(self, t: Attribute, b0: int, b1: int) -> Attribute:
        """The tile type ``t`` with inner blocks b0 x b1, or the 2-D vector type ``t`` as
        its [rows/b0, cols/b1, b0, b1] grid of blocks."""
        key = (t, b0, b1)
        found = self._blocked.get(key)
        if found is None:
            if isinstance(t, xetile.TileType):
                attr = t.attr
                found = xetile.TileType(t.get_shape(), t.element_type,
                                        xetile.TileAttr(attr.order_list, (b0, b1), attr.wg, attr.memory_space.data,
                                                        attr.is_scattered))
            else:
                r, c = t.get_shape()
                found = VectorType(t.element_type, [r // b0, c // b1, b0, b1])
            self._blocked[key] = found
        return found

    def _check_stores(self, blocks: dict) -> None:
        for op in ops_in(self.fn):
            if isinstance(op, xetile.StoreTileOp):
                vb = blocks.get(self.families.find(op.value))
                tb = blocks.get(self.families.find(op.tile))
                if vb != tb:
                    raise LoweringError(f"store_tile: the value is blocked {vb} but the tile {tb}; "
                                        f"re-blocking (tile_pack/tile_unpack) is not supported yet", op)
