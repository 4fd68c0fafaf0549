"""Pass ``xegpu-simt``: subgroup-level XeGPU -> per-lane (SIMT) XeGPU.

Every tensor descriptor gets the ``sg_map`` the XeGPU RFC prescribes for its role on the
target (operand A, operand B in VNNI, anything else), and every vector becomes the
fragment one lane holds, ``[n_distribution_units, wi_data_size]``.  Roles are found from
uses: a packed load is B, a value feeding dpas's lhs is A, everything else (accumulators,
stores, constants) uses the plain map.
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf, vector
from xdsl.dialects.builtin import ModuleOp, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ...dialects import retype, xegpu, xetile
from ...dialects.walk import ops_in
from ...errors import LoweringError
from ...dialects.types import bit_width
from ...targets import Target, as_target
from ..rewrites import block_messages, constants, register_transpose, scattered
from ..analysis.families import Families
from ..analysis.op_kinds import is_elementwise
from ..rewrites.transposed_tiles import memory_sg_map


@dataclass(frozen=True)
class XeGPUToSIMT(ModulePass):
    name = "xegpu-simt"
    target: Target | str = "pvc"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and not _already_simt(fn):
                _Distribute(fn, as_target(self.target)).run()


def _already_simt(fn: func.FuncOp) -> bool:
    """Whether ``fn`` is written in the SIMT form already (the RFC's per-lane examples):
    it has descriptors and every one carries its ``sg_map``."""
    descs = [v.type for op in ops_in(fn) for v in op.results if isinstance(v.type, xegpu.TensorDescType)]
    return bool(descs) and all(t.map is not None for t in descs)


class _Distribute:
    def __init__(self, fn: func.FuncOp, target: Target):
        self.fn, self.target = fn, target
        self.families = Families(fn)
        self.roles: dict[SSAValue, str] = {}
        self.transposed: dict[SSAValue, SSAValue] = {}  # descriptor family -> a value it loads transposed
        self.bits: dict[SSAValue, int] = {}  # family -> element width whose layout it takes (A chains)
        #: (role, bits) -> sg_map and (type, role, sg_map) -> fragment type: each attribute
        #: built once per pass (an xDSL type costs tens of microseconds to build and verify)
        self._sg_maps: dict[tuple, xegpu.SGMapAttr] = {}
        self._fragments: dict[tuple, VectorType] = {}
        self.ops: list[Operation] = []  # the function's ops as :meth:`run` found them

    def run(self) -> None:
        # the function's ops, walked once for the role analyses and the distribution (which
        # retypes values and may add lane reads, so the later checks walk again)
        self.ops = ops_in(self.fn)
        self._find_roles()
        sg = self.target.subgroup_size
        iotas = [op for op in self.ops if isinstance(op, arith.ConstantOp) and scattered.is_lane_iota(op, sg)]
        for op in self.ops:
            if op in iotas:
                continue
            values = list(op.results) + [a for r in op.regions for b in r.blocks for a in b.args]
            for v in values:
                self._distribute(v, op)
        for op in iotas:
            scattered.lane_iota_to_lane_id(op)
        message_slices = block_messages.distribute(self.fn)
        register_transpose.distribute(self, self.fn, skip=message_slices)
        self._check_broadcasts()

    def _check_broadcasts(self) -> None:
        """A broadcast whose source and result lane fragments do not line up (a row in one
        lane layout stretched into a block of another) is a located error, before the
        verifier would report it as an internal one."""
        for op in ops_in(self.fn):
            if not isinstance(op, xetile.TileBroadcastOp):
                continue
            src, res = op.source.type.get_shape(), op.result.type.get_shape()
            if len(src) == len(res) == 2 and any(s not in (1, r) for s, r in zip(src, res)):
                raise LoweringError(
                    f"tile_broadcast: on {self.target.name} the source's lanes hold its elements unlike the "
                    f"result's (lane fragments {list(src)} -> {list(res)}), e.g. a row of another element type "
                    f"broadcast into operand A of tile_mma; convert the row before broadcasting it", op)

    def _role_of(self, v: SSAValue) -> str:
        return self.roles.get(self.families.find(v), "C")

    def _find_roles(self) -> None:
        for op in self.ops:
            if isinstance(op, xegpu.LoadNdOp) and op.transpose is not None:
                self.transposed[self.families.find(op.tensor_desc)] = op.value
                if op.transpose_bit_width is not None:
                    self._mark(op.value, "B")  # 32-bit transpose of 16/8-bit pairs: VNNI operand B
            elif isinstance(op, xegpu.LoadNdOp) and op.packed is not None:
                self._mark(op.tensor_desc, "B")
                self._mark(op.value, "B")
            elif isinstance(op, xegpu.DpasOp):
                self._mark(op.lhs, "A")
                if isinstance(op.lhs.owner, xegpu.LoadNdOp):
                    self._mark(op.lhs.owner.tensor_desc, "A")
                load = block_messages.source_load(op.lhs)
                if load is not None:
                    self._mark(load.tensor_desc, "A")
                    self._mark(load.value, "A")
        self._mark_message_blocks()
        self._propagate_a()

    def _mark_message_blocks(self) -> None:
        """Blocks cut out of a coalesced load (and their shape_casts) take its role."""
        for op in self.ops:
            if block_messages.is_message_slice(op):
                role = self._role_of(op.vector)
                self._mark(op.result, role)
                for use in op.result.uses:
                    self._mark(use.operation.result, role)

    def _propagate_a(self) -> None:
        """Element-wise chains computing operand A (``tile_mma(f(load(t)), ...)``) take A's
        lane layout back to their loads: element-wise ops work in any layout their operands
        share.  Values of another width (an ``astype`` before the mma) use the layout of
        the A element width (``self.bits``).  B needs nothing: its VNNI image is the plain
        layout, rows in order within a lane's column."""
        work = []
        for op in self.ops:
            if isinstance(op, xegpu.DpasOp):
                work.append((op.lhs, bit_width(op.lhs.type.element_type)))
        seen = set()
        while work:
            v, bits = work.pop()
            owner = v.owner
            if v in seen or not isinstance(owner, Operation):
                continue
            seen.add(v)
            if is_elementwise(owner) or isinstance(owner, (vector.BroadcastOp, arith.ConstantOp,
                                                           xetile.TileBroadcastOp)):
                for operand in owner.operands:
                    if isinstance(operand.type, VectorType) and not _replicated_column(operand):
                        self._mark(operand, "A")
                        self.bits[self.families.find(operand)] = bits
                        work.append((operand, bits))
            elif isinstance(owner, xegpu.LoadNdOp):
                self._mark(owner.tensor_desc, "A")
                self.bits[self.families.find(owner.tensor_desc)] = bits
        self._check_a_chains(seen)

    def _check_a_chains(self, chain: set) -> None:
        """A value given A's layout must not also feed ops that expect the plain one. A loop
        that merely carries it (scf.for / scf.while inits, scf.yield, scf.condition) is no
        such op: the carried values are one family with it, so they take A's layout too."""
        for v in chain:
            a_map = self._sg_map("A", v.type.element_type, v)
            if a_map == self._sg_map("C", v.type.element_type, v):
                continue
            for use in v.uses:
                user = use.operation
                if isinstance(user, xegpu.DpasOp) and use.index == 0:
                    continue
                if isinstance(user, (scf.YieldOp, scf.ConditionOp, scf.ForOp, scf.WhileOp)):
                    continue  # carried: its loop arguments and results are v's family (role A)
                if any(self._role_of(r) == "A" for r in user.results):
                    continue
                raise LoweringError(f"a value computed for operand A of tile_mma is also used by {user.name}, which "
                                    f"needs another lane layout on {self.target.name}; compute it twice", user)

    def _mark(self, v: SSAValue, role: str) -> None:
        self.roles[self.families.find(v)] = role

    def _sg_map(self, role: str, elem, v: SSAValue | None = None) -> xegpu.SGMapAttr:
        bits = self.bits.get(self.families.find(v), bit_width(elem)) if v is not None and role == "A" \
            else bit_width(elem)
        found = self._sg_maps.get((role, bits))
        if found is None:
            layout, data = self.target.sg_map(role, bits)
            found = self._sg_maps[role, bits] = xegpu.SGMapAttr(layout, data)
        return found

    def _distribute(self, v: SSAValue, op) -> None:
        t = v.type
        if isinstance(t, xegpu.TensorDescType) and t.map is None and self.families.find(v) in self.transposed:
            value = self.transposed[self.families.find(v)]
            if self._role_of(value) == "C" and t.get_shape()[0] == 1:
                return  # a [1, R] row read as an [R, 1] column: every lane reads all of it (no sg_map)
            layout, data = memory_sg_map(*self.target.sg_map(self._role_of(value), bit_width(t.element_type)))
            retype(v, t.with_sg_map(xegpu.SGMapAttr(layout, data)))
        elif isinstance(t, xegpu.TensorDescType) and t.map is None and t.is_scattered:
            retype(v, t.with_sg_map(scattered.lane_sg_map(t, self.target.subgroup_size)))
        elif isinstance(t, xegpu.TensorDescType) and t.map is None:
            if self._role_of(v) == "C" and t.get_shape()[-1] == 1:
                return  # an [R, 1] column: every lane reads/writes all of it (replicated, no sg_map)
            retype(v, t.with_sg_map(self._sg_map(self._role_of(v), t.element_type, v)))
        elif isinstance(t, VectorType):
            new = self._fragment_type(t, self._role_of(v), op, v)
            if isinstance(v.owner, arith.ConstantOp):
                if constants.distribute(v.owner, new, self._lane_map(t, self._role_of(v), v), self.target.subgroup_size):
                    return  # the constant became a lane table; the lane's read has the fragment type
            retype(v, new)

    def _lane_map(self, t: VectorType, role: str, v: SSAValue):
        """(layout, data) of a vector's lane layout; None for a replicated ``[R, 1]`` column."""
        shape = t.get_shape()
        if len(shape) == 1:
            return (1, self.target.subgroup_size), (1, 1)
        if role == "C" and len(shape) == 2 and shape[1] == 1:
            return None
        sg_map = self._sg_map(role, t.element_type, v)   # A's layout of A's element width, as its fragment
        return tuple(sg_map.layout), tuple(sg_map.data)

    def _fragment_type(self, t: VectorType, role: str, op, v: SSAValue | None = None) -> VectorType:
        shape = list(t.get_shape())
        if len(shape) == 1 and shape[0] == self.target.subgroup_size:
            return VectorType(t.element_type, [1])  # the 1-D vectors of scattered ops: one element per lane
        if role == "B" and len(shape) == 4:  # array_length x VNNI [K/v, N, v] -> [arrays*K, N]
            shape = [shape[0] * shape[1] * shape[3], shape[2]]
        elif role == "B" and len(shape) == 3:  # VNNI [K/v, N, v] -> logical [K, N]
            shape = [shape[0] * shape[2], shape[1]]
        elif len(shape) == 3:  # array_length x [rows, cols] (coalesced loads): blocks one after the other
            shape = [shape[0] * shape[1], shape[2]]
        if role == "C" and len(shape) == 2 and shape[1] == 1:
            # an [R, 1] column (a row reduction) is replicated: every lane holds all of it
            return VectorType(t.element_type, shape)
        sg_map = self._sg_map(role, t.element_type, v)
        key = (t.element_type, tuple(shape), sg_map)
        found = self._fragments.get(key)
        if found is not None:
            return found
        try:
            units, per = sg_map.fragment_shape(shape)
        except Exception as exc:  # noqa: BLE001 - reported in the user's terms
            raise LoweringError(f"a {'x'.join(map(str, shape))} block cannot be spread over the "
                                f"{self.target.subgroup_size} lanes of {self.target.name}: {exc}", op) from None
        found = self._fragments[key] = VectorType(t.element_type, [units, per])
        return found


def _replicated_column(v: SSAValue) -> bool:
    """An ``[R, 1]`` block (a column broadcast into a tile): replicated in every lane in
    any role, it keeps the plain layout (codegen repeats its elements along the row)."""
    shape = v.type.get_shape()
    return len(shape) == 2 and shape[1] == 1
