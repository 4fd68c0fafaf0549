"""Control flow: statement lists with early returns, ``if``/``else`` (``scf.if``),
``while`` (``scf.while``), ``static_range`` (unrolled) and inlined calls of ``@jit``
functions.

Early returns are handled by moving the statements after an ``if`` that returns into
the branch that does not return, recursively, so every ``return`` ends up last in its
branch; values of names reassigned in a branch leave the ``scf.if`` as its results.
"""
from __future__ import annotations

import ast
import inspect
from functools import lru_cache

from xdsl.dialects import scf, vector
from xdsl.dialects.builtin import IndexType, f32, i1
from xdsl.ir import Block, Region, SSAValue

from ..language.core import constexpr
from . import ranks
from . import semantic as sem
from .ir_values import describe
from .carried_literals import discarded_on_retype, lower_retyping, materialize_numbers, retype_or_none
from .source import KernelSource
from .tile_ops import bind_bounds, carry_bounds

RETURN = "__return__"
_MAX_INLINE_DEPTH = 16
#: The most ops one ``static_range`` loop may produce by unrolling (all its iterations,
#: nested loops, branches and inlined calls included; each iteration counts at least
#: one).  Every unrolled op is then blocked, lowered and code-generated separately, so
#: past this the compile time, not the kernel, is the problem: use ``range`` (a real
#: ``scf.for``) instead.
MAX_UNROLLED_OPS = 20_000


def assigned_names(stmts: list[ast.stmt]) -> list[str]:
    """Names (re)bound anywhere in ``stmts``, in first-assignment order."""
    names: list[str] = []
    for stmt in stmts:
        for node in ast.walk(stmt):
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.For):
                targets = [node.target]
            for t in targets:
                for name in _bound_names(t):
                    if name not in names:
                        names.append(name)
    return names


def _bound_names(target: ast.AST) -> list[str]:
    """The names an assignment target binds: ``a``, ``a, (b, c)``; not the array or the
    indices of an element write ``x[i, j] = v`` (those are read)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for t in target.elts for n in _bound_names(t)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


def ends_with_return(stmts: list[ast.stmt]) -> bool:
    """True when every path through ``stmts`` ends in ``return``."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and ends_with_return(last.body) and ends_with_return(last.orelse)


@lru_cache(maxsize=4096)
def _contains_return(stmt: ast.stmt) -> bool:
    """Whether ``stmt`` holds a ``return`` (asked of each ``if`` at each visit: a kernel's
    AST is parsed once and kept, so the answer is kept per node too)."""
    return any(isinstance(n, ast.Return) for n in ast.walk(stmt))


def run_body(builder, stmts: list[ast.stmt]) -> None:
    """Visit ``stmts``; stop after a ``return``; push the rest into non-returning branches."""
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, ast.If) and _contains_return(stmt) and i + 1 < len(stmts):
            rest = stmts[i + 1:]
            body = stmt.body if ends_with_return(stmt.body) else stmt.body + rest
            orelse = stmt.orelse if ends_with_return(stmt.orelse) else stmt.orelse + rest
            builder.visit(ast.copy_location(ast.If(test=stmt.test, body=body, orelse=orelse), stmt))
            return
        builder.visit(stmt)
        if isinstance(stmt, ast.Return):
            return


def scalar_condition(builder, value, node: ast.AST) -> SSAValue:
    """A runtime condition as an i1 scalar (numbers compare with 0, as Python's truth).  A
    [1, 1] tile (e.g. ``xt.max(xt.max(x, axis=0), axis=1) > 0``) gives its one element:
    every lane holds it, so the branch is subgroup-uniform (codegen reads it from lane 0)."""
    if sem.is_tile(value) and list(value.type.get_shape()) == [1, 1]:
        value = builder.emit(vector.ExtractOp(value, [0, 0], value.type.element_type)).result
    if sem.is_tile(value):
        raise builder.error(node, "type mismatch: a condition must be a scalar or a [1, 1] tile (a value "
                            "reduced along both axes), not a larger tile value; use xt.where(cond, a, b) for "
                            "element-wise choices")
    if not sem.is_scalar(value):
        raise builder.error(node, f"type mismatch: a condition must be a scalar, got {describe(value)}")
    return sem.convert(builder, value, i1, node)


def materialize(builder, value, node: ast.AST):
    """A Python number as a runtime scalar (int -> index, float -> f32, bool -> i1)."""
    if isinstance(value, bool):
        return sem.constant(builder, int(value), i1)
    if isinstance(value, int):
        return sem.constant(builder, value, IndexType())
    if isinstance(value, float):
        return sem.constant(builder, value, f32)
    return value


# ----------------------------------------------------------------------------- if / else
def lower_if(builder, node: ast.If) -> None:
    """``if`` on a constexpr (only the taken branch is compiled) or a runtime scalar (``scf.if``)."""
    cond = builder.visit(node.test)
    if not isinstance(cond, SSAValue):
        run_body(builder, node.body if cond else node.orelse)
        return
    cond = scalar_condition(builder, cond, node.test)
    carry_bounds(builder, list(builder.env))  # a scattered tile out of either branch keeps its bounds
    before = dict(builder.env)
    then_block, then_env = _branch(builder, node.body, before)
    else_block, else_env = _branch(builder, node.orelse, before)
    names = [n for n in dict.fromkeys([*then_env, *else_env])
             if (n in before or (n in then_env and n in else_env))
             and not (then_env.get(n, before.get(n)) is else_env.get(n, before.get(n)))]
    results = []
    for name in names:
        t, e = then_env.get(name, before.get(name)), else_env.get(name, before.get(name))
        if not isinstance(t, SSAValue) and not isinstance(e, SSAValue):
            if t == e and type(t) is type(e):
                before[name] = t
                continue
            if not (sem.is_const(t) and sem.is_const(e)):
                raise builder.error(node, f"{name!r} gets different compile-time values in the two branches of "
                                    f"a runtime if; only numbers become runtime values that way")
            # two different numbers: a runtime scalar of their common type (``v = 0`` / ``v = 1``)
        results.append((name, t, e))
    then_vals = _coerce_branch(builder, then_block, [(n, t, e) for n, t, e in results], node, 1)
    else_vals = _coerce_branch(builder, else_block, [(n, e, t) for n, t, e in results], node, 1)
    for (name, *_), a, b in zip(results, then_vals, else_vals):
        ranks.check_same(builder, node, name, a, b, ("in the if branch", "in the else branch"))
        if a.type != b.type:
            raise builder.error(node, f"type mismatch: {name!r} is {_ty(a)} in the if branch but {_ty(b)} in the "
                                f"else branch; both branches must give it one type")
    _yield(builder, then_block, then_vals)
    _yield(builder, else_block, else_vals)
    op = builder.emit(scf.IfOp(cond, [v.type for v in then_vals], Region(then_block), Region(else_block)))
    builder.env = before
    for (name, *_), res in zip(results, op.results):
        res.name_hint = name if name != RETURN else None
        builder.env[name] = res
    bind_bounds(builder, [n for n, *_ in results])
    ranks.carry(builder, [a if a in builder.ranks else b for a, b in zip(then_vals, else_vals)], op.results)


def _ty(value) -> str:
    shape = sem.shape_of(value)
    elem = sem.describe_type(sem.elem_of(value))
    return f"a tile value {'x'.join(map(str, shape))}x{elem}" if shape else f"a scalar of type {elem}"


def _branch(builder, stmts, before):
    outer = builder.block
    block = Block()
    builder.block, builder.env = block, dict(before)
    try:
        run_body(builder, stmts)
        carry_bounds(builder, [n for n in builder.env if "." not in n])
        return block, builder.env
    finally:
        builder.block = outer


def _coerce_branch(builder, block, triples, node, _):
    """Values to yield from one branch: Python numbers become constants of the other
    branch's type, emitted in this branch."""
    outer = builder.block
    builder.block = block
    try:
        out = []
        for name, mine, other in triples:
            if not isinstance(mine, SSAValue):
                if not sem.is_const(mine) or not (isinstance(other, SSAValue) or sem.is_const(other)):
                    raise builder.error(node, f"{name!r} must be a number, scalar or tile in both branches")
                elem = sem.elem_of(other) if isinstance(other, SSAValue) else sem.operand_type((mine, other))
                mine = sem.coerce(builder, mine, elem, sem.shape_of(other), node)
            out.append(mine)
        return out
    finally:
        builder.block = outer


def _yield(builder, block, values) -> None:
    outer = builder.block
    builder.block = block
    builder.emit(scf.YieldOp(*values))
    builder.block = outer


# ----------------------------------------------------------------------------- while
def lower_while(builder, node: ast.While) -> None:
    """``while cond:`` -> ``scf.while``; names reassigned in the body are carried."""
    if node.orelse:
        raise builder.error(node, "while ... else is not supported in kernels")
    no_return_in_loop(builder, node)
    carried = [n for n in assigned_names(node.body) if n in builder.env]
    lower_retyping(builder, node, lambda retyped: _lower_scf_while(builder, node, carried, retyped))


def _lower_scf_while(builder, node: ast.While, carried: list[str], retyped: dict) -> None:
    """One attempt at the ``scf.while`` (see :mod:`.carried_literals` for ``retyped``)."""
    materialize_numbers(builder, carried, node, retyped, materialize)
    for name in carried:
        if not isinstance(builder.env[name], SSAValue):
            raise builder.error(node, f"{name!r} cannot be reassigned inside a loop (it is {builder.env[name]!r})")
    carried = carried + carry_bounds(builder, carried)
    inits = [builder.env[n] for n in carried]
    types = [v.type for v in inits]
    outer_block, outer_env = builder.block, dict(builder.env)
    before, after = Block(arg_types=types), Block(arg_types=types)
    builder.block = before
    _bind_args(builder, carried, before)
    ranks.carry(builder, inits, before.args)
    cond = builder.visit(node.test)
    cond = scalar_condition(builder, materialize(builder, cond, node.test), node.test)
    builder.emit(scf.ConditionOp(cond, *before.args))
    builder.block = after
    builder.env = dict(outer_env)
    _bind_args(builder, carried, after)
    ranks.carry(builder, inits, after.args)
    with discarded_on_retype(before, after):
        run_loop_body(builder, node, carried, inits)
    builder.block, builder.env = outer_block, outer_env
    op = builder.emit(scf.WhileOp(inits, types, Region(before), Region(after)))
    for name, res in zip(carried, op.results):
        res.name_hint = name
        builder.env[name] = res
    bind_bounds(builder, carried)
    ranks.carry(builder, inits, op.results)


def _bind_args(builder, names, block) -> None:
    for name, arg in zip(names, block.args):
        arg.name_hint = name
        builder.env[name] = arg
    bind_bounds(builder, names)


def run_loop_body(builder, node, carried: list[str], inits: list[SSAValue]) -> None:
    """Lower a loop's body into the current block and end it with the ``scf.yield`` of
    the ``carried`` names (checked against their ``inits``)."""
    builder.loop_depth += 1
    try:
        run_body(builder, node.body)
    finally:
        builder.loop_depth -= 1
    carry_bounds(builder, [n for n in carried if "." not in n])  # the bounds of the tiles yielded
    yielded = check_carried(builder, node, carried, inits, [builder.env[n] for n in carried])
    builder.emit(scf.YieldOp(*yielded))


def check_carried(builder, node, names, inits, yielded) -> list[SSAValue]:
    """Loop-carried values keep their type from one iteration to the next (numbers
    assigned in the body become constants of the carried type)."""
    out = []
    for name, before, after in zip(names, inits, yielded):
        if sem.is_const(after):
            after = sem.coerce(builder, after, sem.elem_of(before), sem.shape_of(before), node)
        retype = retype_or_none(builder, name, before, after)
        if retype is not None and after.type != before.type:
            raise retype  # `name` started as a number: the loop is lowered again with its type
        ranks.check_same(builder, node, name, before, after, ("before the loop", "after an iteration"))
        out.append(after)
        if not isinstance(after, SSAValue) or after.type != before.type:
            now = _ty(after) if isinstance(after, SSAValue) else repr(after)
            raise builder.error(node, f"type mismatch: {name!r} changes type inside the loop (from {_ty(before)} "
                                f"to {now}); loop-carried values must keep their type")
    return out


def no_return_in_loop(builder, node) -> None:
    for n in ast.walk(node):
        if isinstance(n, ast.Return):
            raise builder.error(n, "return inside a loop is not supported; use a flag or restructure the loop")
        if isinstance(n, (ast.Break, ast.Continue)):
            raise builder.error(n, f"unsupported Python construct in a kernel: {type(n).__name__}")


# ----------------------------------------------------------------------------- static_range
def lower_static_for(builder, node: ast.For, args: list[ast.AST]) -> None:
    """``for i in static_range(...)``: the body is repeated with ``i`` a constexpr."""
    bounds = [builder.constexpr(a, "static_range bounds") for a in args]
    if not all(isinstance(b, int) for b in bounds) or not 1 <= len(bounds) <= 3:
        raise builder.error(node.iter, f"static_range needs 1 to 3 constexpr ints, got {bounds}")
    if not isinstance(node.target, ast.Name):
        raise builder.error(node.target, "the loop variable must be a single name")
    no_return_in_loop(builder, node)
    trips = range(*bounds)
    if len(trips) > MAX_UNROLLED_OPS:
        raise builder.error(node.iter, _unroll_limit_message(bounds, len(trips), 0, len(trips)))
    start = builder.ops_emitted
    for done, value in enumerate(trips, 1):
        builder.env[node.target.id] = value
        run_body(builder, node.body)
        produced = builder.ops_emitted - start + done
        if produced > MAX_UNROLLED_OPS:
            raise builder.error(node.iter, _unroll_limit_message(bounds, len(trips), done, produced))


def _unroll_limit_message(bounds: list[int], trips: int, done: int, produced: int) -> str:
    args = ", ".join(map(str, bounds))
    so_far = (f"its first {done} of {trips} iterations produced {produced} ops" if done
              else f"it has {trips} iterations, each at least one op")
    return (f"static_range({args}) unrolls into more than {MAX_UNROLLED_OPS} ops ({so_far}); every unrolled op "
            f"is compiled separately (the limit is MAX_UNROLLED_OPS in xetile_dsl/frontend/control.py): use "
            f"`range({args})` for a real loop, or unroll fewer iterations")


# ----------------------------------------------------------------------------- inlining
def inline_call(builder, callee, node: ast.Call):
    """Compile a call of another ``@jit`` function in place; its ``return`` value is the result."""
    fn = callee.fn
    if builder.inline_depth >= _MAX_INLINE_DEPTH:
        raise builder.error(node, f"calls nest deeper than {_MAX_INLINE_DEPTH} levels (recursive @jit calls "
                            f"are not supported)")
    args = [builder.visit(a) for a in node.args]
    kwargs = {k.arg: builder.visit(k.value) for k in node.keywords}
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        raise builder.error(node, f"{fn.__name__}(): {exc}") from None
    bound.apply_defaults()
    env = {k: (v.value if isinstance(v, constexpr) else v) for k, v in bound.arguments.items()}
    return run_inline(builder, fn, env)


#: the frontend: functions of its modules built by :func:`run_inline` are language functions
#: (``@jit`` helpers, the library's kernels/ included, keep their own file and line)
_LIBRARY = __name__.rsplit(".", 1)[0] + "."


def run_inline(builder, fn, env: dict):
    """Build ``fn``'s body in place with the names ``env`` binds (a ``@jit`` call, or
    language functions written as kernel code: ``xt.dot_scaled``, ``xt.unpack_int4``);
    returns the value its ``return`` gave (None without one)."""
    saved = (builder.src, builder.globals, builder.env, builder.loop_depth, builder.pinned)
    if builder.pinned is None and fn.__module__.startswith(_LIBRARY):
        builder.pinned = (builder.src, builder._node)   # the library's code: its ops are the user's call
    builder.src, builder.globals, builder.env, builder.loop_depth = KernelSource.of(fn), fn.__globals__, env, 0
    builder.inline_depth += 1
    try:
        run_body(builder, builder.src.tree.body)
        return builder.env.get(RETURN)
    finally:
        builder.inline_depth -= 1
        builder.src, builder.globals, builder.env, builder.loop_depth, builder.pinned = saved
