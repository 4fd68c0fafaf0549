"""Lowering a kernel's expressions (names, constants, attributes, operators, calls) for
:class:`~.ast_to_xetile.KernelIRBuilder`, which owns the IR being built and the
statements; it hands every expression node to :class:`Expressions`."""
from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from types import ModuleType

from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, VectorType
from xdsl.ir import SSAValue

from ..errors import CacheKeyError
from ..language import core as lang
from ..language import elementwise as ew
from . import (  # noqa: F401 - these register the language functions' builders
    array_elements, array_views, atomic_ops, extern_calls, random_ops, ranks, runtime_builtins, shape_ops, suggestions,
    table_entries, tile_ops, value_ops,
)
from . import int4_unpack, scaled_dot  # noqa: F401 - register xt.unpack_int4, xt.dot_scaled
from .control import inline_call, scalar_condition
from .debug_print import build_print
from .ir_values import describe
from .language_registry import LANGUAGE
from .scalars import binop, compare, unary
from ..dialects.types import type_name
from .value_ops import select


class Expressions:
    """The expression half of the AST walk: each ``visit_*`` returns the expression's
    value (a Python value for a constexpr, else an SSA value)."""

    def __init__(self, builder):
        self.builder = builder

    def visit_Evaluated(self, node: "Evaluated"):
        return node.value

    def visit_Constant(self, node: ast.Constant):
        if isinstance(node.value, (bool, int, float, str)) or node.value is None:
            return node.value
        raise self.builder.error(node, f"unsupported constant {node.value!r}")

    def visit_Name(self, node: ast.Name):
        return self.lookup(node.id, node)

    def lookup(self, name: str, node: ast.AST):
        if name in self.builder.env:
            return self.builder.env[name]
        if name in self.builder.globals:
            self._check_global_read(name, node)
            value = self.builder.globals[name]
            return value.value if isinstance(value, lang.constexpr) else value
        if hasattr(builtins, name):
            self._check_global_read(name, node)
            return getattr(builtins, name)
        hint = suggestions.UNDEFINED_TRITON_HINT if name in suggestions.UNDEFINED_TRITON else ""
        raise self.builder.error(node, f"name {name!r} is not defined{hint}")

    def _check_global_read(self, name: str, node: ast.AST) -> None:
        """Globals are read only where the cache key looked for them (KernelSource.global_reads)."""
        if (name, getattr(node, "lineno", None), getattr(node, "col_offset", None)) not in \
                self.builder.src.global_read_positions:
            raise self.builder.error(node, f"{name!r} is read here from the module's globals, but it is assigned "
                                     f"earlier in this function (in a branch or loop not taken), so the kernel "
                                     f"cache key treats it as a local; give the local and the global different "
                                     f"names", CacheKeyError)

    def visit_Attribute(self, node: ast.Attribute):
        base = self.builder.visit(node.value)
        if isinstance(base, SSAValue):
            return self._value_attribute(base, node)
        try:
            value = getattr(base, node.attr)
        except AttributeError:
            hint = suggestions.hint(node.attr) if _is_our_module(base) else ""
            raise self.builder.error(node, f"{describe(base)} has no attribute {node.attr!r}{hint}") from None
        return value.value if isinstance(value, lang.constexpr) else value

    def _value_attribute(self, value: SSAValue, node: ast.Attribute):
        if isinstance(value.type, VectorType) and node.attr in METHODS:
            return BoundMethod(getattr(ew, "astype" if node.attr == "to" else node.attr), value)
        if isinstance(value.type, VectorType) and node.attr == "T":
            return self.builder.visit(ast.copy_location(ast.Call(func=Evaluated(ew.transpose), args=[Evaluated(value)],
                                                         keywords=[]), node))
        if node.attr == "shape" and isinstance(value.type, MemRefType):
            return self._array_shape(value)
        if node.attr == "shape" and hasattr(value.type, "get_shape"):
            return ranks.logical_shape(self.builder, value)
        if node.attr == "dtype" and hasattr(value.type, "element_type"):
            return lang.dtype(type_name(value.type.element_type))
        raise self.builder.error(node, f"{describe(value)} has no attribute {node.attr!r}")

    def _array_shape(self, array: SSAValue) -> tuple:
        """``x.shape`` of an array: static extents fold to ints (an ``xt.slm_alloc``
        buffer), dynamic ones are the launch-time extents the kernel receives with the
        array (``memref.extract_strided_metadata``), never the type's dynamic marker."""
        sizes, _ = self.builder.array_meta[array]
        return tuple(sizes[d] if extent == DYNAMIC_INDEX else extent
                     for d, extent in enumerate(array.type.get_shape()))

    def visit_Tuple(self, node: ast.Tuple):
        return tuple(self.builder.visit(e) for e in node.elts)

    def visit_List(self, node: ast.List):
        return [self.builder.visit(e) for e in node.elts]

    def visit_UnaryOp(self, node: ast.UnaryOp):
        return unary(self.builder, node.op, self.builder.visit(node.operand), node)

    def visit_Compare(self, node: ast.Compare):
        left, result = self.builder.visit(node.left), None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.builder.visit(right_node)
            if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
                raise self.builder.error(node, f"unsupported comparison {type(op).__name__} in a kernel")
            value = compare(self.builder, op, left, right, node)
            result = value if result is None else binop(self.builder, ast.BitAnd(), result, value, node)
            left = right
        return result

    def visit_BoolOp(self, node: ast.BoolOp):
        values = [self.builder.visit(v) for v in node.values]
        if not any(isinstance(v, SSAValue) for v in values):
            result = values[0]
            for v in values[1:]:
                result = (result and v) if isinstance(node.op, ast.And) else (result or v)
            return result
        conds = [v if not isinstance(v, SSAValue) else scalar_condition(self.builder, v, node) for v in values]
        op = ast.BitAnd() if isinstance(node.op, ast.And) else ast.BitOr()
        result = conds[0]
        for v in conds[1:]:
            result = binop(self.builder, op, result, v, node)
        return result

    def visit_IfExp(self, node: ast.IfExp):
        cond = self.builder.visit(node.test)
        if not isinstance(cond, SSAValue):
            return self.builder.visit(node.body if cond else node.orelse)
        return select(self.builder, cond, self.builder.visit(node.body), self.builder.visit(node.orelse), node)

    def visit_Subscript(self, node: ast.Subscript):
        base = self.builder.visit(node.value)
        if isinstance(base, (tuple, list)):
            return base[self.builder.constexpr(node.slice, "an index into a tuple")]
        if table_entries.is_table(self.builder, base):     # tab[g] of an array table: its entry
            return table_entries.subscript(self.builder, base, node, Evaluated)
        if array_views.is_slice_subscript(base, node):    # x[z, h] of an N-D array: its 2-D slice
            return array_views.subscript(self.builder, base, node)
        if array_elements.is_array(base):
            return array_elements.subscript(self.builder, base, node)
        if isinstance(base, SSAValue) and isinstance(base.type, VectorType):
            return shape_ops.subscript(self.builder, base, node)
        raise self.builder.error(node, f"indexing {describe(base)} is not supported in kernels{_indexing_hint(base)}")

    def visit_BinOp(self, node: ast.BinOp):
        return binop(self.builder, node.op, self.builder.visit(node.left), self.builder.visit(node.right), node)

    def visit_Call(self, node: ast.Call):
        callee = self.builder.visit(node.func)
        if isinstance(callee, BoundMethod):
            call = ast.Call(func=Evaluated(callee.stub), args=[Evaluated(callee.value), *node.args],
                            keywords=node.keywords)
            return self.builder.visit(ast.copy_location(call, node))
        name = getattr(callee, "__xetile_builtin__", None)
        if callee is print:
            return build_print(self.builder, node)
        if name is None:
            return self._call_python(callee, node)
        handler = LANGUAGE.lookup(name)
        if handler is None:
            raise self.builder.error(node, f"xetile_dsl.language.{name} is not supported by the compiler yet")
        return handler(self.builder, node)

    def _call_python(self, callee, node: ast.Call):
        """Calls that are not language ops: @jit functions (inlined), constexpr helpers."""
        if type(callee).__name__ == "JITFunction" and hasattr(callee, "fn"):
            return inline_call(self.builder, callee, node)
        if callee in (range,):
            raise self.builder.error(node, "range() is only supported as the iterable of a for loop")
        if suggestions.is_triton(callee):
            raise self.builder.error(node, suggestions.triton_call(callee))
        if runtime_builtins.handles(callee, node):
            return runtime_builtins.call(self.builder, callee, node)
        if callee in (int, float, min, max, len, abs, bool) or getattr(callee, "__xetile_constexpr_fn__", False):
            what = f"the argument of {getattr(callee, '__name__', callee)}()"
            ours = _RUNTIME_FORMS.get(callee)
            instead = f"; for runtime values use {ours}" if ours else ""
            args = [self.builder.constexpr(a, what, instead) for a in node.args]
            kwargs = {k.arg: self.builder.constexpr(k.value, f"argument {k.arg}") for k in node.keywords}
            try:
                return callee(*args, **kwargs)
            except (TypeError, ValueError) as exc:
                raise self.builder.error(node, f"{getattr(callee, '__name__', callee)}(): {exc}") from None
        raise self.builder.error(node, f"unsupported call: cannot call {describe(callee)} inside a kernel; only "
                                 f"xetile_dsl.language operations, other @jit functions and constexpr helpers "
                                 f"(int, float, min, max, len, abs) are supported")


class Evaluated(ast.expr):
    """An AST leaf holding an already computed value (the receiver of a method call)."""

    _fields = ()

    def __init__(self, value):
        super().__init__()
        self.value = value


@dataclass(frozen=True)
class BoundMethod:
    """``x.sum`` etc.: a language op with its first argument bound to a tile value."""

    stub: object
    value: object


#: tile-value methods -> language ops (``x.to(dtype)``, ``x.sum(axis=1)`` ...)
METHODS = ("to", "astype", "sum", "max", "min", "prod", "argmax", "argmin", "broadcast_to", "reshape", "expand_dims")


def _indexing_hint(base) -> str:
    """What to write instead of indexing a tile value (``r[:, None]`` for a column, an element)."""
    if not (isinstance(base, SSAValue) and isinstance(base.type, VectorType)):
        return ""
    return ("; a [1, N] row becomes an [N, 1] column (and back) with xt.transpose(x), a value is stretched with "
            "xt.broadcast_to(x, shape), and elements are selected with xt.where(condition, x, y) or loaded from "
            "a smaller tile")




def _is_our_module(value) -> bool:
    """``xt`` (xetile_dsl.language) or another module of the package."""
    return isinstance(value, ModuleType) and value.__name__.split(".")[0] == "xetile_dsl"


#: the xt operation a Python builtin of constexprs is for runtime values
_RUNTIME_FORMS = {min: "xt.minimum(a, b)", max: "xt.maximum(a, b)", abs: "xt.abs(x)"}
