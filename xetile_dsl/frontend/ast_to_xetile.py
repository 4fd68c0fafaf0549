"""Frontend: a kernel's Python AST -> XeTile IR (func.func in a builtin.module).

The function is never executed.  Supported syntax is a whitelist: every statement kind
has a ``visit_*`` method here and every expression kind one in :mod:`.expressions`;
anything else is reported as unsupported at the user's line.  Values are either Python
values (constexprs, folded here) or SSA values of the IR; their IR type says what they
are (index scalar, tile, vector, array).
"""
from __future__ import annotations

import ast
from functools import lru_cache

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DictionaryAttr,
    FileLineColLoc,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    StringAttr,
)
from xdsl.ir import Block, Operation, Region, SSAValue

from ..errors import CompilationError
from ..knobs import debug_tracebacks
from ..targets import Target
from .argspec import ArgSpec
from .array_elements import store_subscript
from .array_views import ARRAY_RANKS, array_param_type
from .control import RETURN, lower_if, lower_while, run_body
from .expressions import Expressions
from .ir_values import INDEX, describe
from .loops import lower_for
from .one_d import view_of
from .ranks import propagate
from .scalars import binop
from .semantic import convert, i1
from .source import KernelSource
from ..dialects.attributes import KERNEL_ATTR
from ..dialects.types import ir_type


class KernelIRBuilder:
    """Walks one kernel's AST and emits XeTile IR."""

    def __init__(self, src: KernelSource, globals_: dict, args: dict[str, ArgSpec], constants: dict,
                 target: Target):
        self.src, self.globals, self.args, self.constants, self.target = src, globals_, args, constants, target
        self.env: dict[str, object] = {}
        self.block: Block | None = None
        self.array_meta: dict[SSAValue, tuple[list[SSAValue], list[SSAValue]]] = {}
        self.written_arrays: set[str] = set()
        #: 2-D slice of an N-D array -> that array (frontend/array_views.py)
        self.array_views: dict[SSAValue, SSAValue] = {}
        #: array table argument (its device table, i64 [G, 4]) -> its entries' element type
        self.tables: dict[SSAValue, object] = {}
        #: scattered tile -> its lanes' in-bounds mask (offset inside the array), built at init_tile
        self.scatter_bounds: dict[SSAValue, SSAValue] = {}
        #: values whose logical rank (1-D, 0-D) is not their IR rank (frontend/ranks.py)
        self.ranks: dict[SSAValue, int] = {}
        #: 1-D array -> the sizes and strides of its [1, n] view (frontend/one_d.py)
        self.row_views: dict[SSAValue, tuple[list[SSAValue], list[SSAValue]]] = {}
        self._node: ast.AST | None = None
        #: (source, node) of the user's call while a language function written as kernel code
        #: (``xt.dot_scaled``, ``xt.unpack_int4``) is built in place: its ops and errors are there
        self.pinned: tuple | None = None
        #: loop-carried constants made from Python numbers -> their names (carried_literals)
        self.literal_inits: dict[SSAValue, str] = {}
        self.loop_depth = 0
        self.inline_depth = 0
        self.ops_emitted = 0   # what static_range's unrolling limit counts
        self.expressions = Expressions(self)

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
        fn.attributes[KERNEL_ATTR] = StringAttr(self.target.name)
        divisible = {p: IntegerAttr(16, 64) for p in runtime if self.args[p].spec == "d16"}
        if divisible:
            # integer arguments known to be multiples of 16 (launch-time specialisation)
            fn.attributes["xetile.divisibility"] = DictionaryAttr(divisible)
        return ModuleOp([fn])

    def _param_type(self, spec: ArgSpec):
        if spec.kind == "table":   # its device table (frontend/table_entries.py)
            return array_param_type(ir_type("i64"), 2)
        if spec.kind == "array":
            if spec.ndim == 1:  # viewed as [1, n] by the tiles over it (frontend/one_d.py)
                return MemRefType(ir_type(spec.dtype), [DYNAMIC_INDEX])
            if spec.ndim not in ARRAY_RANKS:
                raise self.src.error(self.src.tree, f"arrays must be 1-D, 2-D, 3-D or 4-D, got a {spec.ndim}-D array")
            return array_param_type(ir_type(spec.dtype), spec.ndim)
        return ir_type(spec.dtype)

    def _bind_param(self, name: str, barg: SSAValue):
        if isinstance(barg.type, MemRefType):
            meta = self.emit(memref.ExtractStridedMetaDataOp(barg))
            self.array_meta[barg] = (list(meta.sizes), list(meta.strides))
            if len(barg.type.get_shape()) == 1:
                self.row_views[barg] = view_of(self, barg)  # once, at the kernel's entry
            if self.args[name].kind == "table":
                self.tables[barg] = ir_type(self.args[name].dtype)
            return barg
        if barg.type in (ir_type("i32"), ir_type("i64")):
            if self.args[name].spec == "1":
                return 1  # specialised on the value 1: a constexpr inside the kernel
            return self.emit(arith.IndexCastOp(barg, INDEX)).result
        return barg

    # ------------------------------------------------------------------ emission helpers
    def emit(self, op: Operation) -> Operation:
        src, node = self.pinned or (self.src, self._node)
        if node is not None:
            op.location = _location(src.filename, node.lineno, node.col_offset + 1)
        self.block.add_op(op)
        self.ops_emitted += 1
        if self.ranks:
            propagate(self, op)
        return op

    def error(self, node: ast.AST, message: str, kind: type = CompilationError) -> CompilationError:
        if self.pinned is not None:
            return self.pinned[0].error(self.pinned[1], message, kind)
        return self.src.error(node, message, kind)

    def visit(self, node: ast.AST):
        saved = self._node
        if hasattr(node, "lineno"):
            self._node = node
        try:
            return self._visitor(node)(node)
        except CompilationError:
            raise
        except Exception as exc:  # noqa: BLE001 - a compiler bug, shown at the user's line
            if debug_tracebacks():
                raise
            raise self.error(node, f"internal compiler error on this line ({type(exc).__name__}: {exc}); "
                             f"set XETILE_DEBUG=1 for the compiler traceback") from None
        finally:
            self._node = saved

    def _visitor(self, node: ast.AST):
        """The method lowering ``node``: a statement's here, an expression's in :class:`Expressions`."""
        name = "visit_" + type(node).__name__
        return getattr(self, name, None) or getattr(self.expressions, name, None) or self.generic_visit

    def generic_visit(self, node: ast.AST):
        raise self.error(node, f"unsupported Python construct in a kernel: {type(node).__name__}")

    def index(self, value, node: ast.AST) -> SSAValue:
        """``value`` as an index SSA value (constexpr ints become constants)."""
        if isinstance(value, bool) or (not isinstance(value, int) and not isinstance(value, SSAValue)):
            raise self.error(node, f"expected an integer, got {describe(value)}")
        if isinstance(value, int):
            return self.emit(arith.ConstantOp(IntegerAttr(value, INDEX))).result
        if isinstance(value.type, IntegerType) and value.type != i1:
            return convert(self, value, INDEX, node)  # e.g. an element of an int32 array
        if value.type != INDEX:
            raise self.error(node, f"expected an integer scalar, got {describe(value)}")
        return value

    def constexpr(self, node: ast.AST, what: str, instead: str = ""):
        """``node``'s compile-time value; ``instead`` (a clause) says what to write for runtime values."""
        value = self.visit(node)
        if isinstance(value, SSAValue):
            raise self.error(node, f"{what} must be a compile-time constant (a constexpr), "
                             f"but it depends on runtime values{instead}")
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

    def visit_Assign(self, node: ast.Assign):
        value = self.visit(node.value)
        for target in node.targets:
            self._assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign):
        if node.value is None:
            raise self.error(node, "a declaration without a value is not supported")
        self._assign(node.target, self.visit(node.value))

    def visit_AugAssign(self, node: ast.AugAssign):
        if isinstance(node.target, ast.Subscript):  # x[i, j] += v: one element read, then written
            load = ast.copy_location(ast.Subscript(value=node.target.value, slice=node.target.slice,
                                                   ctx=ast.Load()), node.target)
            new = binop(self, node.op, self.visit(load), self.visit(node.value), node)
            store_subscript(self, node.target, new)
            return
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "augmented assignment is only supported on plain names and array elements")
        current = self.expressions.lookup(node.target.id, node.target)
        self.env[node.target.id] = binop(self, node.op, current, self.visit(node.value), node)

    def _assign(self, target: ast.AST, value) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, ast.Subscript):
            store_subscript(self, target, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                raise self.error(target, "cannot unpack this value into the names on the left")
            for t, v in zip(target.elts, value):
                self._assign(t, v)
        else:
            raise self.error(target, "only assignment to names and to array elements (x[i, j] = v) is supported "
                             "in kernels")

    def visit_For(self, node: ast.For):
        lower_for(self, node)


__all__ = ["ArgSpec", "KernelIRBuilder"]


@lru_cache(maxsize=4096)
def _location(filename: str, line: int, column: int) -> FileLineColLoc:
    """The location of the ops of one source position: an attribute is immutable, so the
    ops of a line share one (three attributes built per op were ~5% of the frontend)."""
    return FileLineColLoc(StringAttr(filename), IntAttr(line), IntAttr(column))
