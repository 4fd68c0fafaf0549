"""A function rebuilder for 1:N conversions: every old SSA value maps to a list of new ones.

Passes that split a value into several (workgroup -> subgroup distribution, blocking into
XeGPU blocks) subclass :class:`Rebuilder` and give ``_op_<OpClassName>`` handlers; ops
without a handler are cloned (their operands must map to one value each), scf.for
iter_args, scf.if results, scf.while carried values and yields are expanded, and every new op keeps the old op's location.
"""
from __future__ import annotations

from functools import lru_cache

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block, Operation, Region, SSAValue

from ...dialects import xetile
from ...errors import LoweringError

INDEX = IndexType()


@lru_cache(maxsize=None)
def _binary_properties(op_type: type[Operation]) -> dict:
    """The properties ``op_type``'s constructor gives an op of two index operands (e.g.
    arith.addi's ``overflowFlags``), learnt from one op built and erased."""
    a, b = Block(arg_types=[INDEX, INDEX]).args
    probe = op_type(a, b)
    properties = dict(probe.properties)
    probe.erase()
    return properties


@lru_cache(maxsize=4096)
def _index_attr(value: int) -> IntegerAttr:
    """``value : index`` (an attribute is immutable: built once, ~15 us each)."""
    return IntegerAttr(value, INDEX)


#: ops of the owned dialect that every lowering clones as they are when no handler takes
#: them: an extern builtin call on scalars (on vectors it is element-wise: op_kinds.py)
_CLONED = (xetile.ExternElementwiseOp,)


class Rebuilder:
    """Rebuilds one function, mapping each old value to a list of new values."""

    #: dialect whose ops must all have a handler (others are cloned)
    owned_dialect = "xetile"
    #: how error messages name this lowering
    lowering_name = "this lowering"

    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.vmap: dict[SSAValue, list[SSAValue]] = {}
        self.block: Block | None = None

    def run(self) -> None:
        old = self.fn.body.block
        new = Block(arg_types=[a.type for a in old.args])
        for o, n in zip(old.args, new.args):
            n.name_hint = o.name_hint
            self.vmap[o] = [n]
        saved, self.block = self.block, new
        self.prologue(old.first_op)
        self.block = saved
        self._translate_block(old, new)
        self.fn.body.detach_block(old)
        self.fn.body.add_block(new)

    def prologue(self, like: Operation | None) -> None:
        """Ops to emit at the start of the function (before any translated op)."""

    def _translate_block(self, old: Block, new: Block) -> None:
        saved, self.block = self.block, new
        for op in old.ops:
            self._translate(op)
        self.block = saved

    def emit(self, op: Operation, like: Operation | None) -> Operation:
        if like is not None:
            op.location = like.location
        self.block.add_op(op)
        return op

    def one(self, v: SSAValue) -> SSAValue:
        values = self.vmap[v]
        if len(values) != 1:
            raise LoweringError(f"internal: value {v.name_hint or v} was split into {len(values)} values here",
                                v.owner if isinstance(v.owner, Operation) else None)
        return values[0]

    def const_index(self, value: int, like: Operation | None) -> SSAValue:
        return self.emit(arith.ConstantOp.create(result_types=[INDEX], properties={"value": _index_attr(value)}),
                         like).result

    def binary(self, op_type: type[Operation], lhs: SSAValue, rhs: SSAValue, like: Operation | None) -> SSAValue:
        """``op_type(lhs, rhs)``, an arith binary op on two values of one type, made by
        ``create`` with the properties its constructor gives (~40 us less an op)."""
        return self.emit(op_type.create(operands=[lhs, rhs], result_types=[lhs.type],
                                        properties=_binary_properties(op_type)), like).result

    def add(self, base: SSAValue, delta: int, like: Operation | None) -> SSAValue:
        """``base + delta`` (an ``arith.addi`` made by ``create``: xDSL's AddiOp constructor
        costs ~40 us more, and a lowering adds an offset per block)."""
        if delta == 0:
            return base
        return self.binary(arith.AddiOp, base, self.const_index(delta, like), like)

    # --- dispatch ----------------------------------------------------------------
    def _translate(self, op: Operation) -> None:
        handler = getattr(self, f"_op_{type(op).__name__}", None)
        if handler is not None:
            handler(op)
        elif op.dialect_name() == self.owned_dialect and not isinstance(op, _CLONED):
            raise LoweringError(f"{op.name} is not supported by {self.lowering_name} yet", op)
        else:
            self._clone(op)

    def _clone(self, op: Operation) -> None:
        split = [v for v in op.operands if len(self.vmap[v]) != 1]
        if split:
            raise LoweringError(f"{op.name} is not supported by {self.lowering_name} on values this pass splits "
                                f"into pieces ({len(self.vmap[split[0]])} here); express it with xetile ops "
                                f"(tile_reduce, tile_broadcast, tile_transpose) or on a single block", op)
        clone = op.clone(value_mapper={v: self.one(v) for v in op.operands})
        self.block.add_op(clone)
        for o, n in zip(op.results, clone.results):
            self.vmap[o] = [n]

    def _op_ForOp(self, op: scf.ForOp) -> None:
        inits = [v for x in op.iter_args for v in self.vmap[x]]
        old_body = op.body.block
        body = Block(arg_types=[INDEX] + [v.type for v in inits])
        self.vmap[old_body.args[0]] = [body.args[0]]
        body.args[0].name_hint = old_body.args[0].name_hint
        pos = 1
        for old_arg, init in zip(old_body.args[1:], op.iter_args):
            n = len(self.vmap[init])
            self.vmap[old_arg] = list(body.args[pos:pos + n])
            for a in self.vmap[old_arg]:
                a.name_hint = old_arg.name_hint
            pos += n
        self._translate_block(old_body, body)
        loop = self.emit(scf.ForOp(self.one(op.lb), self.one(op.ub), self.one(op.step), inits, Region(body)), op)
        loop.attributes.update(op.attributes)
        pos = 0
        for old_res, init in zip(op.results, op.iter_args):
            n = len(self.vmap[init])
            self.vmap[old_res] = list(loop.results[pos:pos + n])
            pos += n

    def _op_IfOp(self, op: scf.IfOp) -> None:
        """Both branches are rebuilt; the results are what the then-branch yields, expanded."""
        regions = []
        for old in op.regions:
            if not old.blocks:
                regions.append(Region())
                continue
            block = Block()
            self._translate_block(old.block, block)
            regions.append(Region(block))
        types = [v.type for v in regions[0].block.last_op.operands]
        new = self.emit(scf.IfOp(self.one(op.cond), types, regions[0], regions[1]), op)
        pos = 0
        for old_res, old_yield in zip(op.results, op.true_region.block.last_op.operands):
            n = len(self.vmap[old_yield])
            self.vmap[old_res] = list(new.results[pos:pos + n])
            for r in self.vmap[old_res]:
                r.name_hint = old_res.name_hint
            pos += n

    def _op_YieldOp(self, op: scf.YieldOp) -> None:
        self.emit(scf.YieldOp(*[v for x in op.operands for v in self.vmap[x]]), op)

    def _op_WhileOp(self, op: scf.WhileOp) -> None:
        """scf.while: every carried value expands to its N parts in the before block's
        arguments, the condition's forwarded values, the after block's arguments, the yield
        and the results (the after arguments take the condition's split)."""
        inits = [v for x in op.arguments for v in self.vmap[x]]
        before = self._expanded_block(op.before_region.block, [self.vmap[x] for x in op.arguments])
        self._translate_block(op.before_region.block, before)
        forwarded = [self.vmap[x] for x in op.before_region.block.last_op.args]
        after = self._expanded_block(op.after_region.block, forwarded)
        self._translate_block(op.after_region.block, after)
        loop = self.emit(scf.WhileOp(inits, [v.type for parts in forwarded for v in parts],
                                     Region(before), Region(after)), op)
        pos = 0
        for old_res, parts in zip(op.results, forwarded):
            self.vmap[old_res] = list(loop.results[pos:pos + len(parts)])
            pos += len(parts)

    def _expanded_block(self, old: Block, parts: list[list[SSAValue]]) -> Block:
        """A new block whose arguments are the parts of ``old``'s arguments (mapped)."""
        new = Block(arg_types=[v.type for ps in parts for v in ps])
        pos = 0
        for old_arg, ps in zip(old.args, parts):
            self.vmap[old_arg] = list(new.args[pos:pos + len(ps)])
            for a in self.vmap[old_arg]:
                a.name_hint = old_arg.name_hint
            pos += len(ps)
        return new

    def _op_ConditionOp(self, op: scf.ConditionOp) -> None:
        self.emit(scf.ConditionOp(self.one(op.condition), *[v for x in op.args for v in self.vmap[x]]), op)

