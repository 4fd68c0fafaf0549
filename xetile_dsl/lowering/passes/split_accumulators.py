"""Pass ``xegpu-split-accumulators``: K-loop fission over accumulator groups.

A K loop keeps every DPAS accumulator block of its subgroup in registers from the first
iteration to the last.  When those blocks, plus the operands live at one DPAS, do not
fit the register budget (``register_budget.budget_bytes``: a share of the largest
register file), IGC spills inside the hot loop (RFC Appendix 2.5's 64x64 f32 piece is
16 KiB, all of PVC's 256 GRFs: 11.5 KB of spills).  A compiler re-tiles instead: this
pass runs the loop ``P`` times (``P`` the smallest power of two that fits), copy ``p``
keeping only the accumulator blocks of group ``p`` -- contiguous block rows, block
columns too when there are fewer rows than groups -- and the loads and DPAS they need.

* **Accumulator blocks** are iter_args whose value goes through a chain of
  ``xegpu.dpas`` (as the accumulator operand, one use each) back to their own yield.
  Blocks sharing their A operands are one block row; sharing B, one block column.
* **Bytes per copy**: its accumulator blocks, plus the A and B values of one DPAS K
  step of the chains when they are loaded from global memory (xegpu-sink-to-uses keeps
  one K block of them live), or all of them when they come from SLM or are computed.
* **Legal** only when running the body again changes nothing but time: the body (nested
  regions too) may hold loads, prefetches, DPAS, descriptor updates, pure arith/math/
  vector ops, ``gpu.barrier`` (every subgroup runs the same ``P`` copies, so barriers
  still match) and ``scf.if``/``scf.for`` made of those; a store, scatter store, atomic,
  named barrier, fence or call keeps the loop whole (register_budget warns instead).
* **Copies**: ``P`` clones of the loop before it; uses after the loop take each
  accumulator's result from its group's copy and every other result from the last copy
  (all copies compute the same values for them).  Each copy then loses its dead
  iter_args and the ops only they needed (lowering/rewrites/dead_code.py): the other groups'
  accumulators, their A loads and descriptors.  B is read ``P`` times.

``parts=N`` forces ``N`` copies of every legal accumulator loop (measurements).
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ...dialects import xegpu, xetile
from ...dialects.walk import ops_in
from ...dialects.types import bit_width
from ...dialects.attributes import REGISTER_BUDGET_ATTR
from ...targets import Target, kernel_target
from ..rewrites import block_messages
from ..analysis.register_budget import budget_bytes, tell
from ..rewrites.dead_code import is_pure, prune_loop

#: XeGPU ops a duplicated loop body may run again without changing results
_REPEATABLE = (xegpu.LoadNdOp, xegpu.LoadGatherOp, xegpu.PrefetchNdOp, xegpu.PrefetchOp, xegpu.DpasOp,
               xegpu.CreateNdTdescOp, xegpu.CreateTdescOp, xegpu.UpdateNdOffsetOp, xegpu.UpdateOffsetOp,
               xegpu.CompileHintOp, xetile.TileReduceOp, xetile.TileBroadcastOp, scf.IfOp, scf.ForOp, scf.YieldOp)
_REPEATABLE_DIALECTS = ("arith", "math", "vector")


@dataclass
class Chain:
    """One accumulator block: iter_arg ``index`` and the DPAS ops that update it, in order."""

    index: int
    dpas: list[xegpu.DpasOp]

    @property
    def row_key(self) -> tuple[SSAValue, ...]:
        return tuple(d.lhs for d in self.dpas)

    @property
    def col_key(self) -> tuple[SSAValue, ...]:
        return tuple(d.rhs for d in self.dpas)


def _value_bytes(value: SSAValue) -> int:
    t = value.type
    assert isinstance(t, VectorType)
    n = 1
    for d in t.get_shape():
        n *= d
    return n * bit_width(t.element_type) // 8


def accumulator_chains(loop: scf.ForOp) -> list[Chain]:
    """The accumulator blocks (module docstring) that ``loop`` carries, by iter_arg index."""
    body = loop.body.block
    terminator = body.last_op
    chains = []
    for index, arg in enumerate(body.args[1:]):
        value, dpas = arg, []
        while value.uses.get_length() == 1:
            use = next(iter(value.uses))
            user = use.operation
            if isinstance(user, xegpu.DpasOp) and user.parent_block() is body and user.acc is value:
                dpas.append(user)
                value = user.result
                continue
            if user is terminator and use.index == index and dpas:
                chains.append(Chain(index, dpas))
            break
    return chains


def is_repeatable(loop: scf.ForOp) -> bool:
    """Whether running ``loop``'s body again changes nothing but time (module docstring)."""
    for op in ops_in(loop.body):
        if op.name == "gpu.barrier":
            continue
        if not (isinstance(op, _REPEATABLE) or op.dialect_name() in _REPEATABLE_DIALECTS):
            return False
    return True


def _from_global_load(value: SSAValue) -> bool:
    owner = block_messages.source_load(value) or value.owner
    return isinstance(owner, xegpu.LoadNdOp) and owner.tensor_desc.type.memory_space != "slm"


def group_bytes(chains: list[Chain]) -> int:
    """Accumulator blocks of ``chains`` + the operands live at one DPAS of theirs."""
    acc = sum(_value_bytes(c.dpas[-1].result) for c in chains)
    always = {v for c in chains for d in c.dpas for v in (d.lhs, d.rhs) if not _from_global_load(v)}
    steps = max(len(c.dpas) for c in chains)
    per_step = 0
    for j in range(steps):
        live = {v for c in chains if j < len(c.dpas) for v in (c.dpas[j].lhs, c.dpas[j].rhs)} - always
        per_step = max(per_step, sum(_value_bytes(v) for v in live))
    return acc + sum(_value_bytes(v) for v in always) + per_step


def _ordered_keys(keys) -> list:
    seen = {}
    for k in keys:
        seen.setdefault(k, len(seen))
    return list(seen)


def groups_for(chains: list[Chain], parts: int) -> list[list[Chain]] | None:
    """``chains`` in ``parts`` groups of contiguous block rows (and block columns when
    ``parts`` exceeds the rows); None when they cannot be split that way."""
    rows = _ordered_keys(c.row_key for c in chains)
    cols = _ordered_keys(c.col_key for c in chains)
    row_parts = min(parts, len(rows))
    if parts % row_parts or parts // row_parts > len(cols):
        return None
    col_parts = parts // row_parts
    row_of, col_of = {k: i for i, k in enumerate(rows)}, {k: i for i, k in enumerate(cols)}
    groups: list[list[Chain]] = [[] for _ in range(parts)]
    for c in chains:
        g = row_of[c.row_key] * row_parts // len(rows) * col_parts + col_of[c.col_key] * col_parts // len(cols)
        groups[g].append(c)
    return groups if all(groups) else None


def plan(loop: scf.ForOp, target: Target, parts: int = 0) -> list[list[Chain]] | None:
    """The groups ``loop`` is split into, or None when it fits (or cannot be split).
    ``parts`` > 0 forces that many groups."""
    chains = accumulator_chains(loop)
    if not chains or not is_repeatable(loop):
        return None
    if parts:
        return groups_for(chains, parts) if parts > 1 else None
    budget = budget_bytes(target)
    if group_bytes(chains) <= budget:
        return None
    p = 2
    while p <= len(chains):
        groups = groups_for(chains, p)
        if groups is not None and max(group_bytes(g) for g in groups) <= budget:
            return groups
        p *= 2
    return None


def split_loop(loop: scf.ForOp, groups: list[list[Chain]]) -> list[scf.ForOp]:
    """Run ``loop`` once per group (module docstring); return the pruned copies."""
    block = loop.parent_block()
    copies = []
    for _ in groups:
        copy = loop.clone()
        block.insert_op_before(copy, loop)
        copies.append(copy)
    owner = {c.index: g for g, chains in enumerate(groups) for c in chains}
    for i, result in enumerate(loop.results):
        result.replace_all_uses_with(copies[owner.get(i, len(copies) - 1)].results[i])
    block.erase_op(loop)
    copies = [prune_loop(copy) for copy in copies]
    for p in range(len(copies) - 1):
        _hoist_epilogue(copies[p], copies[p + 1:])
    return copies


#: the stores an epilogue may move: block stores and the per-row scattered stores of a
#: transposed accumulator (lowering/passes/wg_to_sg/operand_swap.py stores C^T through a column view)
_STORES = (xegpu.StoreNdOp, xegpu.StoreScatterOp)


def _memref_of(desc: SSAValue) -> SSAValue | None:
    """The memref a tensor descriptor (moved by update_nd_offset or not) points into."""
    while True:
        owner = desc.owner
        if isinstance(owner, (xegpu.UpdateNdOffsetOp, xegpu.UpdateOffsetOp)):
            desc = owner.tensor_desc
        elif isinstance(owner, (xegpu.CreateNdTdescOp, xegpu.CreateTdescOp)):
            return owner.source
        else:
            return None


def _memrefs_read(loops: list[scf.ForOp]) -> set[SSAValue | None]:
    reads = (xegpu.LoadNdOp, xegpu.LoadGatherOp, xegpu.PrefetchNdOp, xegpu.PrefetchOp)
    return {_memref_of(op.tensor_desc) for loop in loops for op in ops_in(loop) if isinstance(op, reads)}


def _forward_slice(sources: list[scf.ForOp], ops: list[Operation]) -> set[Operation]:
    """The ops of ``ops`` (in block order) that use results of ``sources``, transitively."""
    produced = {r for src in sources for r in src.results}
    found = set()
    for op in ops:
        if any(v in produced for v in op.operands):
            found.add(op)
            produced.update(op.results)
    return found


def _ops_after(op: Operation) -> list[Operation]:
    after = []
    op = op.next_op
    while op is not None:
        after.append(op)
        op = op.next_op
    return after


def _epilogue(copy: scf.ForOp, later: list[scf.ForOp]) -> list[Operation] | None:
    """The ops after the last copy that use ``copy``'s results (element-wise ops, loads,
    block stores), with the pure ops computing their other operands, in block order; None
    when they cannot run before the ``later`` copies (module docstring)."""
    after = _ops_after(later[-1])
    users, others = _forward_slice([copy], after), _forward_slice(later, after)
    if not users or users & others or any(not (is_pure(op) or isinstance(op, _STORES)) for op in users):
        return None
    needed = set(users)
    for op in reversed(after):
        if op not in needed:
            continue
        for v in op.operands:
            owner = v.owner
            if owner in later:
                return None
            if isinstance(owner, Operation) and owner in after and owner not in needed:
                if not is_pure(owner):
                    return None
                needed.add(owner)
    stored = {_memref_of(op.tensor_desc) for op in users if isinstance(op, _STORES)}
    if None in stored or stored & _memrefs_read(later):
        return None
    moved = [op for op in after if op in needed]
    passed = [op for op in after[:after.index(moved[-1])] if op not in needed]
    if any(not (is_pure(op) or (isinstance(op, _STORES) and op in others)) for op in passed):
        return None
    return moved


def _hoist_epilogue(copy: scf.ForOp, later: list[scf.ForOp]) -> None:
    """Move :func:`_epilogue` of ``copy`` before the next copy, so its accumulator
    results are stored (and their registers free) before the next copy runs.  Pure ops
    that later epilogues use too (a broadcast bias row, its load, its descriptors and
    addresses) are cloned rather than moved: moved, they stayed live through every later
    copy (ARC 16x64 bias + ReLU spilled 768 B); cloned, each epilogue computes its own."""
    moved = _epilogue(copy, later)
    if moved is None:
        return
    shared = _shared(moved)
    if _rereads_stored(moved, shared):
        shared = set()
    block = copy.parent_block()
    mapper: dict[SSAValue, SSAValue] = {}
    for op in moved:
        if op in shared:
            block.insert_op_before(op.clone(value_mapper=mapper), later[0])
            continue
        op.operands = [mapper.get(v, v) for v in op.operands]
        op.detach()
        block.insert_op_before(op, later[0])


def _shared(moved: list[Operation]) -> set[Operation]:
    """The ops of ``moved`` whose results ops left in place still need (transitively)."""
    moved_set = set(moved)
    shared: set[Operation] = set()
    for op in reversed(moved):
        if op in shared or any(use.operation not in moved_set for r in op.results for use in r.uses):
            shared.add(op)
            shared.update(v.owner for v in op.operands if v.owner in moved_set)
    return shared


def _rereads_stored(moved: list[Operation], shared: set[Operation]) -> bool:
    """Whether a shared load reads a memref the moved stores write: its original, left
    after the stores, would then read what they wrote."""
    stored = {_memref_of(op.tensor_desc) for op in moved if isinstance(op, _STORES)}
    loads = (xegpu.LoadNdOp, xegpu.LoadGatherOp)
    return any(isinstance(op, loads) and _memref_of(op.tensor_desc) in stored for op in shared)


@dataclass(frozen=True)
class SplitAccumulators(ModulePass):
    """Split K loops whose accumulators exceed the register budget (module docstring)."""

    name = "xegpu-split-accumulators"
    target: Target | str = ""  # default: the function's xetile.kernel attribute (else pvc)
    parts: int = 0  # > 0: force this many copies of every splittable accumulator loop

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp):
                target = kernel_target(fn, self.target)
                for loop in reversed([o for o in ops_in(fn) if isinstance(o, scf.ForOp)]):
                    verdict = loop.attributes.pop(REGISTER_BUDGET_ATTR, None)
                    groups = plan(loop, target, self.parts)
                    if verdict is not None and not self.parts:
                        _tell(verdict, loop, groups, target)
                    if groups is not None:
                        split_loop(loop, groups)


def _tell(verdict, loop: scf.ForOp, groups: list[list[Chain]] | None, target: Target) -> None:
    """Report the register budget's ``verdict`` (REGISTER_BUDGET_ATTR) at the
    loop's first DPAS (the user's tile_mma): the split, or why there is none."""
    text = {k: v.data for k, v in verdict.data.items()}
    dpas = next((op for op in ops_in(loop.body) if isinstance(op, xegpu.DpasOp)), loop)
    if groups is not None:
        tell("note", text["note"].replace("{parts}", str(len(groups))), dpas)
    elif not is_repeatable(loop):
        tell(text["severity"], text["unsplit"], dpas)
    elif accumulator_chains(loop) and group_bytes(accumulator_chains(loop)) > budget_bytes(target):
        tell("error", text["row_error"], dpas)

