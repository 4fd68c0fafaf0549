"""XeTile atomics on one array element and the memory fence, with their memory order::

    %old = xetile.atomic_rmw_scalar addi %v, %lock[%i] {sem = "acq_rel", scope = "device"} : i32, memref<?xi32> -> i32
    %old = xetile.atomic_cas_scalar %lock[%i], %cmp, %v {sem = "acquire"} : memref<?xi32>, i32, i32 -> i32
    xetile.fence {sem = "release", scope = "workgroup"}

``sem`` (relaxed, acquire, release, acq_rel) and ``scope`` (workgroup, device) are the
memory order and the scope every atomic carries (:data:`SEMS`, :data:`SCOPES`; absent
means :data:`DEFAULT_SEM` / :data:`DEFAULT_SCOPE`, as in Triton).  A scalar atomic is done
once per program (one lane of the program's only subgroup) and its old value is the
program's scalar.  The tile atomics (``xetile.atomic_rmw``) carry the same two
properties (:func:`check_order`).
"""
from __future__ import annotations

from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType, StringAttr
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict, irdl_op_definition, operand_def, opt_prop_def, prop_def, \
    result_def, var_operand_def
from xdsl.utils.exceptions import VerifyException


#: memory orders of an atomic or a fence
SEMS = ("relaxed", "acquire", "release", "acq_rel")
#: the agents an atomic's order is guaranteed among
SCOPES = ("workgroup", "device")
DEFAULT_SEM, DEFAULT_SCOPE = "acq_rel", "device"
#: the arith kinds of every atomic read-modify-write (tile and element forms)
ATOMIC_KINDS = ("addf", "addi", "assign", "maximumf", "maxs", "maxu", "minimumf", "mins", "minu", "mulf", "muli",
                "ori", "andi", "xori", "maxnumf", "minnumf", "cmpxchg")


def scalar_atomic_subgroups_error(name: str, subgroups: int) -> str:
    """Why a scalar atomic cannot run in a workgroup of several subgroups (the message every
    flavour gives)."""
    return (f"{name}: an atomic on one element runs once per program, which needs a program of one subgroup, "
            f"but this workgroup has {subgroups} subgroups (its wg_map's sg_layout); use a kernel without wg_map "
            "for the atomics, or the tile form on a scattered tile")


def order_of(op: IRDLOperation) -> tuple[str, str]:
    """``(sem, scope)`` of an atomic or fence, defaults filled in."""
    sem, scope = op.properties.get("sem"), op.properties.get("scope")
    return (sem.data if sem is not None else DEFAULT_SEM), (scope.data if scope is not None else DEFAULT_SCOPE)


def check_order(op: IRDLOperation) -> None:
    sem, scope = order_of(op)
    if sem not in SEMS:
        raise VerifyException(f"{op.name}: sem '{sem}' is not one of {', '.join(SEMS)}")
    if scope not in SCOPES:
        raise VerifyException(f"{op.name}: scope '{scope}' is not one of {', '.join(SCOPES)}")


def order_props(sem: str | None, scope: str | None) -> dict[str, Attribute]:
    props = {}
    if sem is not None:
        props["sem"] = StringAttr(sem)
    if scope is not None:
        props["scope"] = StringAttr(scope)
    return props


class _ScalarAtomic(IRDLOperation):
    """The shared fields and checks: an order, an array, one index per dimension,
    element-typed values, the old element as the result."""

    sem = opt_prop_def(StringAttr)
    scope = opt_prop_def(StringAttr)
    result = result_def()

    def verify_(self) -> None:
        check_order(self)
        mt = self.memref.type
        if len(self.indices) != len(mt.get_shape()):
            raise VerifyException(f"{self.name}: {len(self.indices)} index(es) for a rank-{len(mt.get_shape())} "
                                  "array; give one per dimension")
        for v in self.values():
            if v.type != mt.element_type:
                raise VerifyException(f"{self.name}: operand type {v.type} must be the element type "
                                      f"{mt.element_type}")
        if self.result.type != mt.element_type:
            raise VerifyException(f"{self.name}: result type {self.result.type} must be {mt.element_type}")


@irdl_op_definition
class AtomicRMWScalarOp(_ScalarAtomic):
    """``old = x[i...]; x[i...] = kind(old, value)`` atomically; returns ``old``."""

    name = "xetile.atomic_rmw_scalar"
    kind = prop_def(StringAttr)
    value = operand_def()
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = ("$kind $value `,` $memref `[` $indices `]` attr-dict `:` type($value) `,` type($memref) "
                       "`->` type($result)")

    def __init__(self, kind: str, value: SSAValue, memref: SSAValue, indices, sem=None, scope=None):
        super().__init__(operands=[value, memref, list(indices)], result_types=[value.type],
                         properties={"kind": StringAttr(kind), **order_props(sem, scope)})

    def values(self):
        return [self.value]

    def verify_(self) -> None:
        if self.kind.data not in ATOMIC_KINDS:
            raise VerifyException(f"{self.name}: unknown kind '{self.kind.data}'")
        super().verify_()


@irdl_op_definition
class AtomicCASScalarOp(_ScalarAtomic):
    """``old = x[i...]; if old == cmp: x[i...] = value`` atomically; returns ``old``
    (integers: the comparison is on the bits)."""

    name = "xetile.atomic_cas_scalar"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    cmp = operand_def()
    value = operand_def()
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = ("$memref `[` $indices `]` `,` $cmp `,` $value attr-dict `:` type($memref) `,` "
                       "type($cmp) `,` type($value) `->` type($result)")

    def __init__(self, memref: SSAValue, indices, cmp: SSAValue, value: SSAValue, sem=None, scope=None):
        super().__init__(operands=[memref, list(indices), cmp, value], result_types=[value.type],
                         properties=order_props(sem, scope))

    def values(self):
        return [self.cmp, self.value]

    def verify_(self) -> None:
        if not isinstance(self.value.type, IntegerType) or self.value.type.width.data not in (32, 64):
            raise VerifyException(f"{self.name}: compare-exchange is on 32/64-bit integers, got {self.value.type}")
        super().verify_()


@irdl_op_definition
class FenceOp(IRDLOperation):
    """A memory fence: orders this program's memory accesses before and after it with
    ``sem`` among the agents of ``scope``."""

    name = "xetile.fence"
    sem = opt_prop_def(StringAttr)
    scope = opt_prop_def(StringAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def __init__(self, sem=None, scope=None):
        super().__init__(properties=order_props(sem, scope))

    def verify_(self) -> None:
        check_order(self)
        if order_of(self)[0] == "relaxed":
            raise VerifyException(f"{self.name}: a relaxed fence orders nothing; use acquire, release or acq_rel")


SCALAR_ATOMIC_OPS = (AtomicRMWScalarOp, AtomicCASScalarOp)
ATOMIC_OPS = (AtomicRMWScalarOp, AtomicCASScalarOp, FenceOp)
