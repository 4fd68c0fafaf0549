"""Frontend: a kernel's Python AST -> XeTile IR (func.func in a builtin.module).

The function is never executed.  Supported syntax is a whitelist: every statement and
expression kind has a ``visit_*`` method, anything else is reported as unsupported at
the user's line.  Values are either Python values (constexprs, folded here) or SSA values
of the IR; their IR type says what they are (index scalar, tile, vector, array).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    StringAttr,
    VectorType,
)
from xdsl.ir import Block, Operation, Region, SSAValue

from ..dialects import xetile
from ..errors import CompilationError
from ..language import core as lang
from ..targets import Target
from .source import KernelSource
from .types import ir_type, is_float, type_name

INDEX = IndexType()


@dataclass(frozen=True)
class ArgSpec:
    """What one kernel argument is: an array (dtype, ndim) or a scalar (dtype)."""

    kind: str  # "array" | "scalar"
    dtype: str
    ndim: int = 0


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

    # ------------------------------------------------------------------ entry
    def build(self) -> ModuleOp:
        params = [a.arg for a in self.src.tree.args.args]
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
        for stmt in self.src.tree.body:
            self.visit(stmt)
        self.emit(func.ReturnOp())
        fn = func.FuncOp(self.src.name, (arg_types, []), Region(self.block))
        fn.attributes["xetile.kernel"] = StringAttr(self.target.name)
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
            return self.emit(arith.IndexCastOp(barg, INDEX)).result
        return barg

    # ------------------------------------------------------------------ emission helpers
    def emit(self, op: Operation) -> Operation:
        node = self._node
        if node is not None:
            op.location = FileLineColLoc(StringAttr(self.src.filename), IntAttr(node.lineno),
                                         IntAttr(node.col_offset + 1))
        self.block.add_op(op)
        return op

    def error(self, node: ast.AST, message: str) -> CompilationError:
        return self.src.error(node, message)

    def visit(self, node: ast.AST):
        saved = self._node
        if hasattr(node, "lineno"):
            self._node = node
        try:
            return super().visit(node)
        finally:
            self._node = saved

    def generic_visit(self, node: ast.AST):
        raise self.error(node, f"unsupported Python construct in a kernel: {type(node).__name__}")

    def index(self, value, node: ast.AST) -> SSAValue:
        """``value`` as an index SSA value (constexpr ints become constants)."""
        if isinstance(value, bool) or (not isinstance(value, int) and not isinstance(value, SSAValue)):
            raise self.error(node, f"expected an integer, got {_describe(value)}")
        if isinstance(value, int):
            return self.emit(arith.ConstantOp(IntegerAttr(value, INDEX))).result
        if value.type != INDEX:
            raise self.error(node, f"expected an integer scalar, got {_describe(value)}")
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
        if node.value is not None:
            raise self.error(node, "kernels cannot return a value; store results with store_tile")

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
        from .loops import lower_for

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
            value = self.globals[name]
            return value.value if isinstance(value, lang.constexpr) else value
        import builtins

        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.error(node, f"name {name!r} is not defined")

    def visit_Attribute(self, node: ast.Attribute):
        base = self.visit(node.value)
        if isinstance(base, SSAValue):
            return self._value_attribute(base, node)
        try:
            value = getattr(base, node.attr)
        except AttributeError:
            raise self.error(node, f"{_describe(base)} has no attribute {node.attr!r}") from None
        return value.value if isinstance(value, lang.constexpr) else value

    def _value_attribute(self, value: SSAValue, node: ast.Attribute):
        if node.attr == "shape" and hasattr(value.type, "get_shape"):
            return tuple(value.type.get_shape())
        if node.attr == "dtype" and hasattr(value.type, "element_type"):
            return lang.dtype(type_name(value.type.element_type))
        raise self.error(node, f"{_describe(value)} has no attribute {node.attr!r}")

    def visit_Tuple(self, node: ast.Tuple):
        return tuple(self.visit(e) for e in node.elts)

    def visit_List(self, node: ast.List):
        return [self.visit(e) for e in node.elts]

    def visit_UnaryOp(self, node: ast.UnaryOp):
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.USub):
            return self._binop(ast.Sub(), 0, operand, node) if isinstance(operand, SSAValue) else -operand
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.Not) and not isinstance(operand, SSAValue):
            return not operand
        raise self.error(node, f"unsupported unary operator {type(node.op).__name__}")

    def visit_BinOp(self, node: ast.BinOp):
        return self._binop(node.op, self.visit(node.left), self.visit(node.right), node)

    def _binop(self, op: ast.operator, lhs, rhs, node: ast.AST):
        from .scalars import binop

        return binop(self, op, lhs, rhs, node)

    def visit_Call(self, node: ast.Call):
        callee = self.visit(node.func)
        name = getattr(callee, "__xetile_builtin__", None)
        if callee is print:
            from .debug_print import build_print

            return build_print(self, node)
        if name is None:
            if callee in (range,):
                raise self.error(node, "range() is only supported as the iterable of a for loop")
            if callee in (int, float, min, max, len, abs):
                args = [self.constexpr(a, f"the argument of {callee.__name__}()") for a in node.args]
                return callee(*args)
            raise self.error(node, f"cannot call {_describe(callee)} inside a kernel; only xetile_dsl.language "
                             f"operations and constexpr helpers (int, min, max, len, abs) are supported")
        from . import tile_ops

        handler = getattr(tile_ops, f"build_{name}", None)
        if handler is None:
            raise self.error(node, f"xetile_dsl.language.{name} is not supported by the compiler yet")
        return handler(self, node)


def _describe(value) -> str:
    if isinstance(value, SSAValue):
        t = value.type
        if isinstance(t, xetile.TileType):
            return f"a tile {'x'.join(map(str, t.get_shape()))}x{type_name(t.element_type)}"
        if isinstance(t, VectorType):
            return f"a tile value {'x'.join(map(str, t.get_shape()))}x{type_name(t.element_type)}"
        if isinstance(t, MemRefType):
            return f"an array of {type_name(t.element_type)}"
        return f"a runtime scalar of type {type_name(t) if not isinstance(t, IndexType) else 'int'}"
    if isinstance(value, lang.dtype):
        return f"the dtype {value!r}"
    return f"{type(value).__name__} {value!r}"


describe = _describe


def dense_splat(shape, dtype_name: str, value) -> Operation:
    """``arith.constant dense<value> : vector<shape x dtype>``."""
    elem = ir_type(dtype_name)
    vtype = VectorType(elem, shape)
    py = float(value) if is_float(elem) else int(value)
    return arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vtype, [py]))


__all__ = ["ArgSpec", "KernelIRBuilder", "dense_splat", "describe", "FloatAttr", "gpu", "scf"]
