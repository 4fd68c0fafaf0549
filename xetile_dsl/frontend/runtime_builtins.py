"""Python's ``min``, ``max`` and ``abs`` on runtime values, and ``xt.item``.

Inside a kernel the builtins fold when every argument is a compile-time number (as
before); when one is a runtime scalar (``xt.program_id(0)``, an element read from an
array, a loop variable) they become the language's element-wise ops: ``min(a, b, c)`` is
``xt.minimum(xt.minimum(a, b), c)``, ``abs(x)`` is ``xt.abs(x)``; operands are promoted
as by the arithmetic operators (:mod:`.semantic`), and a float NaN propagates (as in
``xt.maximum``, unlike Python's order-dependent answer).  ``key=`` and ``default=`` are
compile-time only, and a single iterable argument is a constexpr tuple or list.
"""
from __future__ import annotations

import ast

from xdsl.dialects import vector
from xdsl.ir import SSAValue

from . import semantic as sem
from .ir_values import describe
from .language_registry import LANGUAGE
from .tile_ops import _bind
from .value_ops import MAXIMUM, MINIMUM, abs_value, minmax_values

_FORMS = (min, max, abs)


def handles(callee, node: ast.Call) -> bool:
    """Whether :func:`call` lowers ``callee(...)``: ``min``/``max``/``abs`` without
    keywords or ``*args`` (those stay compile-time only)."""
    return callee in _FORMS and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args)


def call(builder, callee, node: ast.Call):
    """``min``/``max``/``abs``: folded on numbers, else the language op (module docstring)."""
    name = callee.__name__
    values = [builder.visit(a) for a in node.args]
    if len(values) == 1 and isinstance(values[0], (tuple, list)) and callee is not abs:
        values = list(values[0])
    if not any(isinstance(v, SSAValue) for v in values):
        try:
            return callee(*values)
        except (TypeError, ValueError) as exc:
            raise builder.error(node, f"{name}(): {exc}") from None
    for v in values:
        if not (sem.is_const(v) or sem.is_scalar(v) or sem.is_tile(v)):
            raise builder.error(node, f"{name}() takes numbers, runtime scalars or tile values, got {describe(v)}")
    if callee is abs:
        if len(values) != 1:
            raise builder.error(node, f"abs() takes exactly one argument ({len(values)} given)")
        return abs_value(builder, values[0])
    if len(values) < 2:
        raise builder.error(node, f"{name}() of runtime values needs at least two arguments (or one tuple of "
                            f"them), got {len(values)}")
    result = values[0]
    for v in values[1:]:
        result = minmax_values(builder, result, v, MINIMUM if callee is min else MAXIMUM, node)
    return result


@LANGUAGE.register("item")
def build_item(builder, node: ast.Call):
    """``xt.item(v)``: the one element of a one-element tile value as a scalar (numbers and
    scalars pass unchanged)."""
    args = _bind(builder, node)
    value = builder.visit(args["x"])
    if sem.is_const(value) or sem.is_scalar(value):
        return value
    if not sem.is_tile(value):
        raise builder.error(args["x"], f"xt.item takes a one-element tile value or a scalar, got {describe(value)}")
    shape = sem.shape_of(value)
    if any(s != 1 for s in shape):
        dims = "x".join(map(str, shape))
        raise builder.error(args["x"], f"xt.item needs a value with exactly one element, got a {dims} tile value; "
                            f"reduce it first (xt.sum(xt.sum(v, axis=1), axis=0) is [1, 1]) or load a [1, 1] tile")
    return builder.emit(vector.ExtractOp(value, [0] * len(shape), value.type.element_type)).result


__all__ = ["build_item", "call", "handles"]
