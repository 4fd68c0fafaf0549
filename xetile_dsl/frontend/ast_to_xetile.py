"""Frontend: a kernel's Python AST -> XeTile IR (func.func in a builtin.module).

The function is never executed.  Supported syntax is a whitelist: every statement and
expression kind has a ``visit_*`` method, anything else is reported as unsupported at
the user's line.  Values are either Python values (constexprs, folded here) or SSA values
of the IR; their IR type says what they are (index scalar, tile, vector, array).
"""
from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from types import ModuleType

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DictionaryAttr,
    FileLineColLoc,
    IntAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    StringAttr,
    VectorType,
)
from xdsl.ir import Block, Operation, Region, SSAValue

from ..errors import CacheKeyError, CompilationError
from ..knobs import debug_tracebacks
from ..language import core as lang
from ..language import elementwise as ew
from ..targets import Target
from . import elementwise, suggestions, tile_ops
from .argspec import ArgSpec
from .control import RETURN, inline_call, lower_if, lower_while, run_body, scalar_condition
from .debug_print import build_print
from .elementwise import select
from .ir_values import INDEX, describe
from .loops import lower_for
from .scalars import binop, compare, unary
from .source import KernelSource
from .types import ir_type, type_name


class KernelIRBuilder(ast.NodeVisitor):
    """Walks one kernel's AST and emits XeTile IR."""

    def __init__(self, src: KernelSource, globals_: dict, args: dict[str, ArgSpec], constants: dict,
                 target: Target):
        self.src, self.globals, self.args, self.constants, self.target = src, globals_, args, constants, target
        self.env: dict[str, object] = {}
        self.block: Block | None = None
        self.array_meta: dict[SSAValue, tuple[list[SSAValue], list[SSAValue]]] = {}
        self.written_arrays: set[str] = set()
        self._node: ast.AST | None = None
        self.loop_depth = 0
        self.inline_depth = 0
        self.ops_emitted = 0   # what static_range's unrolling limit counts

    # ------------------------------------------------------------------ entry
    def build(self) -> ModuleOp:
        signature = self.src.tree.args
        params = [a.arg for a in (*signature.posonlyargs, *signature.args, *signature.kwonlyargs)]
        runtime = [p for p in params if p not in self.constants]
        missing = [p for p in runtime if p not in self.args]
        if missing:
            raise self.src.error(self.src.tree, f"no type known for parameter(s) {', '.join(missing)}: pass an "
                                 f"argument or list them in signature=")
        arg_types = [self._param_type(self.args[p]) for p in runtime]
        self.block = Block(arg_types=arg_types)
        for name, value in self.constants.items():
            self.env[name] = value
        for name, barg in zip(runtime, self.block.args):
            barg.name_hint = name
            self.env[name] = self._bind_param(name, barg)
        run_body(self, self.src.tree.body)
        self._node = None
        self.emit(func.ReturnOp())
        fn = func.FuncOp(self.src.name, (arg_types, []), Region(self.block))
        fn.attributes["xetile.kernel"] = StringAttr(self.target.name)
        divisible = {p: IntegerAttr(16, 64) for p in runtime if self.args[p].spec == "d16"}
        if divisible:
            # integer arguments known to be multiples of 16 (launch-time specialisation)
            fn.attributes["xetile.divisibility"] = DictionaryAttr(divisible)
        return ModuleOp([fn])

    def _param_type(self, spec: ArgSpec):
        if spec.kind == "array":
            if spec.ndim != 2:
                raise self.src.error(self.src.tree, f"arrays must be 2-D for now, got a {spec.ndim}-D array")
            return MemRefType(ir_type(spec.dtype), [DYNAMIC_INDEX, DYNAMIC_INDEX], StridedLayoutAttr([None, 1], 0))
        return ir_type(spec.dtype)

    def _bind_param(self, name: str, barg: SSAValue):
        if isinstance(barg.type, MemRefType):
            meta = self.emit(memref.ExtractStridedMetaDataOp(barg))
            self.array_meta[barg] = (list(meta.sizes), list(meta.strides))
            return barg
        if barg.type in (ir_type("i32"), ir_type("i64")):
            if self.args[name].spec == "1":
                return 1  # specialised on the value 1: a constexpr inside the kernel
            return self.emit(arith.IndexCastOp(barg, INDEX)).result
        return barg

    # ------------------------------------------------------------------ emission helpers
    def emit(self, op: Operation) -> Operation:
        node = self._node
        if node is not None:
            op.location = FileLineColLoc(StringAttr(self.src.filename), IntAttr(node.lineno),
                                         IntAttr(node.col_offset + 1))
        self.block.add_op(op)
        self.ops_emitted += 1
        return op

    def error(self, node: ast.AST, message: str, kind: type = CompilationError) -> CompilationError:
        return self.src.error(node, message, kind)

    def visit(self, node: ast.AST):
        saved = self._node
        if hasattr(node, "lineno"):
            self._node = node
        try:
            return super().visit(node)
        except CompilationError:
            raise
        except Exception as exc:  # noqa: BLE001 - a compiler bug, shown at the user's line
            if debug_tracebacks():
                raise
            raise self.error(node, f"internal compiler error on this line ({type(exc).__name__}: {exc}); "
                             f"set XETILE_DEBUG=1 for the compiler traceback") from None
        finally:
            self._node = saved

    def generic_visit(self, node: ast.AST):
        raise self.error(node, f"unsupported Python construct in a kernel: {type(node).__name__}")

    def index(self, value, node: ast.AST) -> SSAValue:
        """``value`` as an index SSA value (constexpr ints become constants)."""
        if isinstance(value, bool) or (not isinstance(value, int) and not isinstance(value, SSAValue)):
            raise self.error(node, f"expected an integer, got {describe(value)}")
        if isinstance(value, int):
            return self.emit(arith.ConstantOp(IntegerAttr(value, INDEX))).result
        if value.type != INDEX:
            raise self.error(node, f"expected an integer scalar, got {describe(value)}")
        return value

    def constexpr(self, node: ast.AST, what: str):
        value = self.visit(node)
        if isinstance(value, SSAValue):
            raise self.error(node, f"{what} must be a compile-time constant (a constexpr), "
                             f"but it depends on runtime values")
        return value

    # ------------------------------------------------------------------ statements
    def visit_Expr(self, node: ast.Expr):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.visit(node.value)

    def visit_Pass(self, node: ast.Pass):
        return None

    def visit_Return(self, node: ast.Return):
        if self.loop_depth:
            raise self.error(node, "return inside a loop is not supported; use a flag or restructure the loop")
        if node.value is not None:
            if not self.inline_depth:
                raise self.error(node, "kernels cannot return a value; store results with store_tile")
            self.env[RETURN] = self.visit(node.value)

    def visit_If(self, node: ast.If):
        lower_if(self, node)

    def visit_While(self, node: ast.While):
        lower_while(self, node)

    def visit_Evaluated(self, node: "Evaluated"):
        return node.value

    def visit_Assign(self, node: ast.Assign):
        value = self.visit(node.value)
        for target in node.targets:
            self._assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign):
        if node.value is None:
            raise self.error(node, "a declaration without a value is not supported")
        self._assign(node.target, self.visit(node.value))

    def visit_AugAssign(self, node: ast.AugAssign):
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "augmented assignment is only supported on plain names")
        current = self._lookup(node.target.id, node.target)
        self.env[node.target.id] = self._binop(node.op, current, self.visit(node.value), node)

    def _assign(self, target: ast.AST, value) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                raise self.error(target, "cannot unpack this value into the names on the left")
            for t, v in zip(target.elts, value):
                self._assign(t, v)
        else:
            raise self.error(target, "only assignment to names is supported in kernels")

    def visit_For(self, node: ast.For):
        lower_for(self, node)

    # ------------------------------------------------------------------ expressions
    def visit_Constant(self, node: ast.Constant):
        if isinstance(node.value, (bool, int, float, str)) or node.value is None:
            return node.value
        raise self.error(node, f"unsupported constant {node.value!r}")

    def visit_Name(self, node: ast.Name):
        return self._lookup(node.id, node)

    def _lookup(self, name: str, node: ast.AST):
        if name in self.env:
            return self.env[name]
        if name in self.globals:
            self._check_global_read(name, node)
            value = self.globals[name]
            return value.value if isinstance(value, lang.constexpr) else value
        if hasattr(builtins, name):
            self._check_global_read(name, node)
            return getattr(builtins, name)
        hint = suggestions.UNDEFINED_TRITON_HINT if name in suggestions.UNDEFINED_TRITON else ""
        raise self.error(node, f"name {name!r} is not defined{hint}")

    def _check_global_read(self, name: str, node: ast.AST) -> None:
        """Globals are read only where the cache key looked for them (KernelSource.global_reads)."""
        if (name, getattr(node, "lineno", None), getattr(node, "col_offset", None)) not in \
                self.src.global_read_positions:
            raise self.error(node, f"{name!r} is read here from the module's globals, but it is assigned earlier "
                             f"in this function (in a branch or loop not taken), so the kernel cache key treats "
                             f"it as a local; give the local and the global different names", CacheKeyError)

    def visit_Attribute(self, node: ast.Attribute):
        base = self.visit(node.value)
        if isinstance(base, SSAValue):
            return self._value_attribute(base, node)
        try:
            value = getattr(base, node.attr)
        except AttributeError:
            hint = suggestions.hint(node.attr) if _is_our_module(base) else ""
            raise self.error(node, f"{describe(base)} has no attribute {node.attr!r}{hint}") from None
        return value.value if isinstance(value, lang.constexpr) else value

    def _value_attribute(self, value: SSAValue, node: ast.Attribute):
        if isinstance(value.type, VectorType) and node.attr in METHODS:
            return BoundMethod(getattr(ew, "astype" if node.attr == "to" else node.attr), value)
        if isinstance(value.type, VectorType) and node.attr == "T":
            return self.visit(ast.copy_location(ast.Call(func=Evaluated(ew.transpose), args=[Evaluated(value)],
                                                         keywords=[]), node))
        if node.attr == "shape" and isinstance(value.type, MemRefType):
            return self._array_shape(value)
        if node.attr == "shape" and hasattr(value.type, "get_shape"):
            return tuple(value.type.get_shape())
        if node.attr == "dtype" and hasattr(value.type, "element_type"):
            return lang.dtype(type_name(value.type.element_type))
        raise self.error(node, f"{describe(value)} has no attribute {node.attr!r}")

    def _array_shape(self, array: SSAValue) -> tuple:
        """``x.shape`` of an array: static extents fold to ints (an ``xt.slm_alloc``
        buffer), dynamic ones are the launch-time extents the kernel receives with the
        array (``memref.extract_strided_metadata``), never the type's dynamic marker."""
        sizes, _ = self.array_meta[array]
        return tuple(sizes[d] if extent == DYNAMIC_INDEX else extent
                     for d, extent in enumerate(array.type.get_shape()))

    def visit_Tuple(self, node: ast.Tuple):
        return tuple(self.visit(e) for e in node.elts)

    def visit_List(self, node: ast.List):
        return [self.visit(e) for e in node.elts]

    def visit_UnaryOp(self, node: ast.UnaryOp):
        return unary(self, node.op, self.visit(node.operand), node)

    def visit_Compare(self, node: ast.Compare):
        left, result = self.visit(node.left), None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.visit(right_node)
            if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
                raise self.error(node, f"unsupported comparison {type(op).__name__} in a kernel")
            value = compare(self, op, left, right, node)
            result = value if result is None else binop(self, ast.BitAnd(), result, value, node)
            left = right
        return result

    def visit_BoolOp(self, node: ast.BoolOp):
        values = [self.visit(v) for v in node.values]
        if not any(isinstance(v, SSAValue) for v in values):
            result = values[0]
            for v in values[1:]:
                result = (result and v) if isinstance(node.op, ast.And) else (result or v)
            return result
        conds = [v if not isinstance(v, SSAValue) else scalar_condition(self, v, node) for v in values]
        op = ast.BitAnd() if isinstance(node.op, ast.And) else ast.BitOr()
        result = conds[0]
        for v in conds[1:]:
            result = binop(self, op, result, v, node)
        return result

    def visit_IfExp(self, node: ast.IfExp):
        cond = self.visit(node.test)
        if not isinstance(cond, SSAValue):
            return self.visit(node.body if cond else node.orelse)
        return select(self, cond, self.visit(node.body), self.visit(node.orelse), node)

    def visit_Subscript(self, node: ast.Subscript):
        base = self.visit(node.value)
        if isinstance(base, (tuple, list)):
            return base[self.constexpr(node.slice, "an index into a tuple")]
        raise self.error(node, f"indexing {describe(base)} is not supported in kernels{_indexing_hint(base)}")

    def visit_BinOp(self, node: ast.BinOp):
        return self._binop(node.op, self.visit(node.left), self.visit(node.right), node)

    def _binop(self, op: ast.operator, lhs, rhs, node: ast.AST):
        return binop(self, op, lhs, rhs, node)

    def visit_Call(self, node: ast.Call):
        callee = self.visit(node.func)
        if isinstance(callee, BoundMethod):
            call = ast.Call(func=Evaluated(callee.stub), args=[Evaluated(callee.value), *node.args],
                            keywords=node.keywords)
            return self.visit(ast.copy_location(call, node))
        name = getattr(callee, "__xetile_builtin__", None)
        if callee is print:
            return build_print(self, node)
        if name is None:
            return self._call_python(callee, node)
        handler = getattr(tile_ops, f"build_{name}", None) or getattr(elementwise, f"build_{name}", None)
        if handler is None:
            raise self.error(node, f"xetile_dsl.language.{name} is not supported by the compiler yet")
        return handler(self, node)

    def _call_python(self, callee, node: ast.Call):
        """Calls that are not language ops: @jit functions (inlined), constexpr helpers."""
        if type(callee).__name__ == "JITFunction" and hasattr(callee, "fn"):
            return inline_call(self, callee, node)
        if callee in (range,):
            raise self.error(node, "range() is only supported as the iterable of a for loop")
        if suggestions.is_triton(callee):
            raise self.error(node, suggestions.triton_call(callee))
        if callee in (int, float, min, max, len, abs, bool) or getattr(callee, "__xetile_constexpr_fn__", False):
            args = [self.constexpr(a, f"the argument of {getattr(callee, '__name__', callee)}()") for a in node.args]
            kwargs = {k.arg: self.constexpr(k.value, f"argument {k.arg}") for k in node.keywords}
            try:
                return callee(*args, **kwargs)
            except (TypeError, ValueError) as exc:
                raise self.error(node, f"{getattr(callee, '__name__', callee)}(): {exc}") from None
        raise self.error(node, f"unsupported call: cannot call {describe(callee)} inside a kernel; only "
                         f"xetile_dsl.language operations, other @jit functions and constexpr helpers (int, "
                         f"float, min, max, len, abs) are supported")


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
METHODS = ("to", "astype", "sum", "max", "min", "prod", "argmax", "argmin", "broadcast_to")


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


__all__ = ["ArgSpec", "KernelIRBuilder"]
