"""IR builder of ``xt.extern(name, *args, result=dtype, numpy_impl=None)``: one
``xetile.extern_elementwise`` call of an OpenCL builtin, element-wise over broadcast tile
values or on scalars.

Each argument keeps its own element type (``ldexp(float, int)`` has two); Python ints are
i32 and floats f32, index scalars i32, 16-bit floats travel as f32 (as the xt math
functions do), and a 16-bit float ``result`` is computed in f32 and rounded once.
``numpy_impl`` (a module-level host function, never called on the device) is recorded by
its qualified name for the interpreter."""
from __future__ import annotations

import ast
import difflib

from xdsl.dialects.builtin import BFloat16Type, Float16Type, IndexType, IntegerType, VectorType, f32, i1, i32

from ..dialects import xetile
from ..dialects._xetile_extern_ops import OPENCL_BUILTINS
from ..dialects.types import ir_type, is_float, is_fp8
from ..language import core as lang
from . import semantic as sem
from .dependencies import host_function_name
from .ir_values import describe
from .language_registry import LANGUAGE

_USAGE = "xt.extern(\"name\", *args, result=xt.float32, numpy_impl=None)"


@LANGUAGE.register("extern")
def build_extern(builder, node: ast.Call):
    """``xt.extern("hypot", x, y, result=xt.float32, numpy_impl=np.hypot)``."""
    if not node.args:
        raise builder.error(node, f"xt.extern needs the builtin's name first: {_USAGE}")
    name = builder.constexpr(node.args[0], "xt.extern's name")
    if not isinstance(name, str) or not name.isidentifier():
        raise builder.error(node.args[0], f"xt.extern's name must be a string naming an OpenCL builtin "
                                          f"(e.g. \"hypot\"), got {name!r}")
    if name not in OPENCL_BUILTINS:
        close = difflib.get_close_matches(name, sorted(OPENCL_BUILTINS), n=3)
        raise builder.error(node.args[0], f"xt.extern: {name!r} is not an OpenCL builtin xt.extern can call"
                                          + (f"; did you mean {' or '.join(map(repr, close))}?" if close else "")
                                          + " (the OpenCL C math, integer and common functions whose parameters "
                                            "are values; relational and pointer-taking builtins are left out)")
    keywords = {k.arg: k.value for k in node.keywords}
    unknown = sorted(set(keywords) - {"result", "numpy_impl"})
    if unknown or None in keywords:
        raise builder.error(node, f"xt.extern takes the keywords result= and numpy_impl= only, got "
                                  f"{', '.join(map(str, unknown or ['**kwargs']))}: {_USAGE}")
    if "result" not in keywords:
        raise builder.error(node, f"xt.extern needs result=<an xt dtype> (the builtin's return type): {_USAGE}")
    result = _result_type(builder, keywords["result"])
    impl = _numpy_impl(builder, keywords.get("numpy_impl"))
    if len(node.args) < 2:
        raise builder.error(node, f"xt.extern(\"{name}\") needs at least one argument: {_USAGE}")
    values = [_argument(builder, a, name, k) for k, a in enumerate(node.args[1:])]
    shape = sem.broadcast_shapes(builder, [sem.shape_of(v) for v in values], node)
    args = [sem.coerce(builder, v, _arg_type(v), shape, node) for v in values]
    wide = f32 if isinstance(result, (Float16Type, BFloat16Type)) else result
    out_type = VectorType(wide, list(shape)) if shape is not None else wide
    out = builder.emit(xetile.ExternElementwiseOp(name, args, out_type, impl)).result
    return sem.convert(builder, out, result, node)


def _result_type(builder, arg: ast.AST):
    dt = builder.constexpr(arg, "xt.extern's result")
    if not isinstance(dt, lang.dtype):
        raise builder.error(arg, f"xt.extern's result must be an xt dtype such as xt.float32 or xt.int32, got {dt!r}")
    elem = ir_type(dt.name)
    if not (is_float(elem) or isinstance(elem, IntegerType)) or elem == i1 or is_fp8(elem):
        raise builder.error(arg, f"xt.extern's result must be a float (f16, bf16, f32, f64) or integer "
                                 f"(8 to 64 bits) dtype, got xt.{dt.name}")
    return elem


def _numpy_impl(builder, arg: ast.AST | None) -> str:
    """``module:qualname`` of the host function, "" for none."""
    if arg is None:
        return ""
    fn = builder.constexpr(arg, "xt.extern's numpy_impl")
    if fn is None:
        return ""
    name = host_function_name(fn) if callable(fn) else ""
    if not name:
        raise builder.error(arg, f"xt.extern's numpy_impl must be a module-level host function such as np.hypot, "
                                 f"got {fn!r}")
    return name


def _argument(builder, arg: ast.AST, name: str, k: int):
    value = builder.visit(arg)
    if not (sem.is_const(value) or sem.is_tile(value) or sem.is_scalar(value)) or isinstance(value, bool):
        raise builder.error(arg, f"type mismatch: argument {k + 1} of xt.extern(\"{name}\") must be a number, "
                                 f"scalar or tile value of a float or integer type, got {describe(value)}")
    elem = sem.elem_of(value)
    if elem is not None and (elem == i1 or is_fp8(elem)):
        raise builder.error(arg, f"type mismatch: argument {k + 1} of xt.extern(\"{name}\") must be of a float or "
                                 f"integer type (not {sem.describe_type(elem)}); convert it with .to(...)")
    return value


def _arg_type(value):
    """The type an argument is passed in: its own, with Python ints and index as i32,
    Python floats and 16-bit floats as f32."""
    if isinstance(value, int):
        return i32
    if isinstance(value, float):
        return f32
    elem = sem.elem_of(value)
    if isinstance(elem, IndexType):
        return i32
    return f32 if isinstance(elem, (Float16Type, BFloat16Type)) else elem
