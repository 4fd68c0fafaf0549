"""The interpreter's engine: the op registry and a walker over regions and blocks.

Each op is implemented once, by a function registered on the op's xDSL class with
``@impl(OpClass)`` (:data:`IMPLS` is the interpreter's :class:`~..op_registry.OpRegistry`,
the registry class codegen and the frontend register with too)::

    @impl(arith.AddfOp)
    def _addf(run: Run, op, a, b):
        return cast(a + b, result_dtype(op))

An op is looked up by its class and then its bases, so an implementation registered on
xDSL's class also runs our subclass of it (``vector.broadcast``); where our dialects
*replace* an xDSL op by an unrelated class of the same name (the vector-capable arith
casts, ``cmpi``, ``cmpf`` and ``select`` of ``dialects/_arith_vector.py``) both classes are
registered: IR built in Python may hold xDSL's, IR parsed from text holds ours.

The function receives the :class:`Run` (program ids, memory, and ``run.region(...)``
to execute nested regions), the op, and the op's operand values; it returns the result
value, a tuple of result values (a list when the op has a variable number, e.g.
``scf.for``), or None.  Terminators (:data:`TERMINATORS`: ``scf.yield``,
``scf.condition``, ``func.return``, ``gpu.return``) are not registered: :meth:`Run.block`
stops at them and hands their operand values to the op that owns the region.

The engine is ours rather than ``xdsl.interpreter``: docs/decisions/022-interpreter-engine.md
says why.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func, gpu, scf
from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Block, Operation, Region, SSAValue

from ..op_registry import OpRegistry
from .memory import Memory
from .values import InterpreterError

#: op class -> implementation
IMPLS = OpRegistry("interpreter")

#: the ops that end a block and give its values to the region's owner (our
#: ``gpu.return`` subclasses xDSL's)
TERMINATORS: tuple[type[Operation], ...] = (scf.YieldOp, scf.ConditionOp, func.ReturnOp, gpu.ReturnOp)

#: ``@impl(OpClass, ...)``: register the decorated function as the implementation of those ops
impl = IMPLS.register


@dataclass
class Launch:
    """What every program of one launch shares: grid, memory, the module, the level."""

    grid: tuple[int, int, int]
    memory: Memory
    module: Operation
    workgroup_level: bool = False
    num_subgroups: int = 1
    subgroup_size: int = 16
    #: the scheduler of programs that interleave at atomics (:mod:`.programs`), else None
    programs: object = None


@dataclass
class Run:
    """One program executing the kernel: its ids and its SSA values.  A program is a whole
    workgroup (whole-tile mode, subgroup-level kernels) or one subgroup of a workgroup
    (per-subgroup mode, :mod:`.subgroups`)."""

    launch: Launch
    program_id: tuple[int, int, int]
    env: dict[SSAValue, object] = field(default_factory=dict)
    #: per-subgroup execution: the workgroup (scheduler, SLM) and this subgroup's id;
    #: None when the program is the whole workgroup
    workgroup: object = None
    subgroup: int = 0
    #: whole-tile mode: this workgroup's SLM buffers (one per ``memref.alloc`` op in space 3)
    slm: dict = field(default_factory=dict)

    @property
    def memory(self) -> Memory:
        return self.launch.memory

    def value(self, v: SSAValue):
        try:
            return self.env[v]
        except KeyError:
            raise InterpreterError(f"value {v} is used before it is defined") from None

    def region(self, region: Region, args: Sequence[object]) -> tuple[Operation | None, list]:
        """Run the region's (single) entry block with ``args``; returns the terminator
        (None when the block has none) and its operand values."""
        if not region.blocks:
            return None, []
        return self.block(region.blocks.first, args)

    def block(self, block: Block, args: Sequence[object]) -> tuple[Operation | None, list]:
        if len(args) != len(block.args):
            raise InterpreterError(f"block takes {len(block.args)} arguments, got {len(args)}")
        for barg, value in zip(block.args, args):
            self.env[barg] = value
        for op in block.ops:
            if isinstance(op, TERMINATORS):
                return op, [self.value(o) for o in op.operands]
            self.op(op)
        return None, []

    def op(self, op: Operation) -> None:
        """Execute one op and bind its results."""
        fn = IMPLS.lookup(op)
        if fn is None:
            raise located(op, InterpreterError(f"the interpreter does not implement {op.name}"))
        try:
            out = fn(self, op, *[self.value(o) for o in op.operands])
        except InterpreterError as exc:
            raise located(op, exc) from None
        except (ArithmeticError, ValueError, IndexError, TypeError) as exc:
            raise located(op, InterpreterError(f"{op.name}: {type(exc).__name__}: {exc}")) from exc
        results = op.results
        if not results:
            return
        # a list is always the list of results (region ops); a tuple is one for several results
        values = out if isinstance(out, list) or (isinstance(out, tuple) and len(results) != 1) else (out,)
        if len(values) != len(results):
            raise located(op, InterpreterError(f"{op.name}: implementation gave {len(values)} values for "
                                                f"{len(results)} results"))
        for r, v in zip(results, values):
            self.env[r] = v


def located(op: Operation, exc: InterpreterError) -> InterpreterError:
    """``exc`` with the op's source location (the user's line) in front, once."""
    if getattr(exc, "located", False):
        return exc
    loc = getattr(op, "location", None)
    prefix = ""
    if isinstance(loc, FileLineColLoc):
        prefix = f"{loc.filename.data}:{loc.line.data}:{loc.column.data}: "
    new = InterpreterError(f"{prefix}{exc}" if prefix else f"{op.name}: {exc}" if op.name not in str(exc) else str(exc))
    new.located = True
    return new


def prop(op: Operation, name: str):
    """A property or attribute of ``op`` (None when absent)."""
    return op.properties.get(name, op.attributes.get(name))
