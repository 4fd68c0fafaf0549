"""``for i in range(...)`` -> ``scf.for`` with loop-carried values as iter_args."""
from __future__ import annotations

import ast

from xdsl.dialects import scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Region, SSAValue

from .carried_literals import discarded_on_retype, lower_retyping, materialize_numbers
from . import ranks
from .tile_ops import bind_bounds, carry_bounds
from .control import assigned_names, lower_static_for, materialize, no_return_in_loop, run_loop_body

INDEX = IndexType()


def lower_for(builder, node: ast.For) -> None:
    """Emit ``scf.for`` for ``for <name> in range(start, stop[, step])`` (or unroll a
    ``static_range``); names reassigned in the body are loop-carried."""
    if node.orelse:
        raise builder.error(node, "for ... else is not supported in kernels")
    it = node.iter
    if isinstance(it, ast.Call) and getattr(builder.visit(it.func), "__xetile_static_range__", False):
        return lower_static_for(builder, node, it.args)
    if not isinstance(node.target, ast.Name):
        raise builder.error(node.target, "the loop variable must be a single name")
    no_return_in_loop(builder, node)
    bounds = _range_bounds(builder, it)
    lb, ub, step = (builder.index(v, it) for v in bounds)
    carried = [n for n in assigned_names(node.body) if n in builder.env and n != node.target.id]
    lower_retyping(builder, node, lambda retyped: _lower_scf_for(builder, node, (lb, ub, step), carried, retyped))


def _lower_scf_for(builder, node: ast.For, bounds, carried: list[str], retyped: dict) -> None:
    """One attempt at the ``scf.for`` (see :mod:`.carried_literals` for ``retyped``)."""
    materialize_numbers(builder, carried, node, retyped, materialize)
    for name in carried:
        if not isinstance(builder.env[name], SSAValue):
            raise builder.error(node, f"{name!r} is a compile-time constant and cannot be reassigned inside a loop")
    carried = carried + carry_bounds(builder, carried)
    inits = [builder.env[n] for n in carried]
    body = Block(arg_types=[INDEX] + [v.type for v in inits])
    body.args[0].name_hint = node.target.id
    outer_block, outer_env = builder.block, dict(builder.env)
    builder.block = body
    builder.env[node.target.id] = body.args[0]
    for name, barg in zip(carried, body.args[1:]):
        barg.name_hint = name
        builder.env[name] = barg
    bind_bounds(builder, carried)
    ranks.carry(builder, inits, body.args[1:])
    with discarded_on_retype(body):
        run_loop_body(builder, node, carried, inits)
    builder.block = outer_block
    loop = builder.emit(scf.ForOp(*bounds, inits, Region(body)))
    builder.env = outer_env
    for name, result in zip(carried, loop.results):
        result.name_hint = name
        builder.env[name] = result
    bind_bounds(builder, carried)
    ranks.carry(builder, inits, loop.results)


def _range_bounds(builder, it: ast.AST):
    if not (isinstance(it, ast.Call) and builder.visit(it.func) is range and not it.keywords):
        raise builder.error(it, "unsupported Python construct: only `for ... in range(...)` and "
                            "`for ... in xt.static_range(...)` loops are supported in kernels")
    args = [builder.visit(a) for a in it.args]
    if len(args) == 1:
        return 0, args[0], 1
    if len(args) == 2:
        return args[0], args[1], 1
    if len(args) == 3:
        if isinstance(args[2], int) and args[2] <= 0:
            raise builder.error(it, "range() step must be a positive integer in a kernel loop")
        return tuple(args)
    raise builder.error(it, "range() takes 1 to 3 arguments")
