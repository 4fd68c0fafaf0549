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
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp, VectorType
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from ..dialects import retype, xegpu
from ..errors import LoweringError
from ..frontend.types import bit_width
from ..targets import Target, get_target
from .analysis import Families
from . import constants, scattered
from .transposed import memory_sg_map


@dataclass(frozen=True)
class XeGPUToSIMT(ModulePass):
    name = "xegpu-simt"
    target: str = "pvc"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp):
                _Distribute(fn, get_target(self.target)).run()


class _Distribute:
    def __init__(self, fn: func.FuncOp, target: Target):
        self.fn, self.target = fn, target
        self.families = Families(fn)
        self.roles: dict[SSAValue, str] = {}
        self.transposed: dict[SSAValue, SSAValue] = {}  # descriptor family -> a value it loads transposed

    def run(self) -> None:
        self._find_roles()
        sg = self.target.subgroup_size
        iotas = [op for op in self.fn.walk() if isinstance(op, arith.ConstantOp) and scattered.is_lane_iota(op, sg)]
        for op in list(self.fn.walk()):
            if op in iotas:
                continue
            values = list(op.results) + [a for r in op.regions for b in r.blocks for a in b.args]
            for v in values:
                self._distribute(v, op)
        for op in iotas:
            scattered.lane_iota_to_lane_id(op)

    def _role_of(self, v: SSAValue) -> str:
        return self.roles.get(self.families.find(v), "C")

    def _find_roles(self) -> None:
        for op in self.fn.walk():
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

    def _mark(self, v: SSAValue, role: str) -> None:
        self.roles[self.families.find(v)] = role

    def _sg_map(self, role: str, elem) -> xegpu.SGMapAttr:
        layout, data = self.target.sg_map(role, bit_width(elem))
        return xegpu.SGMapAttr(layout, data)

    def _distribute(self, v: SSAValue, op) -> None:
        t = v.type
        if isinstance(t, xegpu.TensorDescType) and t.map is None and self.families.find(v) in self.transposed:
            value = self.transposed[self.families.find(v)]
            layout, data = memory_sg_map(*self.target.sg_map(self._role_of(value), bit_width(t.element_type)))
            retype(v, t.with_sg_map(xegpu.SGMapAttr(layout, data)))
        elif isinstance(t, xegpu.TensorDescType) and t.map is None and t.is_scattered:
            # one offset per lane (scattered tiles are blocked 1 x sg)
            retype(v, t.with_sg_map(xegpu.SGMapAttr((1, self.target.subgroup_size), (1, 1))))
        elif isinstance(t, xegpu.TensorDescType) and t.map is None:
            if self._role_of(v) == "C" and t.get_shape()[-1] == 1:
                return  # an [R, 1] column: every lane reads/writes all of it (replicated, no sg_map)
            retype(v, t.with_sg_map(self._sg_map(self._role_of(v), t.element_type)))
        elif isinstance(t, VectorType):
            new = self._fragment_type(t, self._role_of(v), op)
            if isinstance(v.owner, arith.ConstantOp):
                if constants.distribute(v.owner, new, self._lane_map(t, self._role_of(v)), self.target.subgroup_size):
                    return  # the constant became a lane table; the lane's read has the fragment type
            retype(v, new)

    def _lane_map(self, t: VectorType, role: str):
        """(layout, data) of a vector's lane layout; None for a replicated ``[R, 1]`` column."""
        shape = t.get_shape()
        if len(shape) == 1:
            return (1, self.target.subgroup_size), (1, 1)
        if role == "C" and len(shape) == 2 and shape[1] == 1:
            return None
        return self.target.sg_map(role, bit_width(t.element_type))

    def _fragment_type(self, t: VectorType, role: str, op) -> VectorType:
        shape = list(t.get_shape())
        if len(shape) == 1 and shape[0] == self.target.subgroup_size:
            return VectorType(t.element_type, [1])  # the 1-D vectors of scattered ops: one element per lane
        if role == "B" and len(shape) == 3:  # VNNI [K/v, N, v] -> logical [K, N]
            shape = [shape[0] * shape[2], shape[1]]
        if role == "C" and len(shape) == 2 and shape[1] == 1:
            # an [R, 1] column (a row reduction) is replicated: every lane holds all of it
            return VectorType(t.element_type, shape)
        sg_map = self._sg_map(role, t.element_type)
        try:
            units, per = sg_map.fragment_shape(shape)
        except Exception as exc:  # noqa: BLE001 - reported in the user's terms
            raise LoweringError(f"a {'x'.join(map(str, shape))} block cannot be spread over the "
                                f"{self.target.subgroup_size} lanes of {self.target.name}: {exc}", op) from None
        return VectorType(t.element_type, [units, per])
