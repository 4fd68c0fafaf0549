"""IR builders for ``xetile_dsl.language.elementwise``: math, casts, ``where``, value
creation, reductions and shape ops, each registered in :data:`~.language_registry.LANGUAGE`.
Types and shapes come from :mod:`.semantic`."""
from __future__ import annotations

import ast
import math as pymath

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, VectorType, f32, i1, i32
from xdsl.ir import OpResult

from ..dialects import _arith_vector as av
from ..dialects import xetile
from ..dialects._math_ops import ErfcOp
from ..dtypes import FP8_TYPES
from ..errors import UsageError
from ..language import core as lang
from . import one_d, ranks
from . import semantic as sem
from .ir_values import describe
from .language_registry import LANGUAGE
from .scalars import binop
from .tile_ops import _bind, _wg_map_arg
from ..dialects.types import bit_width, ir_type, is_float, is_unsigned

_MATH = {"exp": math.ExpOp, "exp2": math.Exp2Op, "log": math.LogOp, "log2": math.Log2Op, "sqrt": math.SqrtOp,
         "rsqrt": math.RsqrtOp, "sin": math.SinOp, "cos": math.CosOp, "tanh": math.TanhOp, "erf": math.ErfOp,
         "tan": math.TanOp, "asin": math.AsinOp, "acos": math.AcosOp, "atan": math.AtanOp, "sinh": math.SinhOp,
         "cosh": math.CoshOp, "asinh": math.AsinhOp, "acosh": math.AcoshOp, "atanh": math.AtanhOp,
         "log10": math.Log10Op, "log1p": math.Log1pOp, "expm1": math.ExpM1Op, "cbrt": math.CbrtOp,
         "floor": math.FloorOp, "ceil": math.CeilOp, "trunc": math.TruncOp, "round": math.RoundOp,
         "erfc": ErfcOp}
_FOLD = {"exp": pymath.exp, "exp2": lambda x: 2.0 ** x, "log": pymath.log, "log2": pymath.log2, "sqrt": pymath.sqrt,
         "rsqrt": lambda x: 1 / pymath.sqrt(x), "sin": pymath.sin, "cos": pymath.cos, "tanh": pymath.tanh,
         "erf": pymath.erf, "sigmoid": lambda x: 1 / (1 + pymath.exp(-x)), "tan": pymath.tan, "asin": pymath.asin,
         "acos": pymath.acos, "atan": pymath.atan, "sinh": pymath.sinh, "cosh": pymath.cosh, "asinh": pymath.asinh,
         "acosh": pymath.acosh, "atanh": pymath.atanh, "log10": pymath.log10, "log1p": pymath.log1p,
         "expm1": pymath.expm1, "erfc": pymath.erfc, "cbrt": lambda x: pymath.copysign(abs(x) ** (1 / 3), x), "floor": lambda x: float(pymath.floor(x)),
         "ceil": lambda x: float(pymath.ceil(x)), "trunc": lambda x: float(pymath.trunc(x)),
         "round": lambda x: pymath.copysign(pymath.floor(abs(x) + 0.5), x)}
#: two-operand float functions -> their math op (and the constexpr fold)
_BINARY = {"atan2": (math.Atan2Op, pymath.atan2), "pow": (math.PowFOp, pymath.pow),
           "copysign": (math.CopySignOp, pymath.copysign)}
# reduction name -> (signed int kind, unsigned int kind, float kind)
_REDUCE = {"sum": ("add", "add", "add"), "prod": ("mul", "mul", "mul"), "max": ("maxsi", "maxui", "maximumf"),
           "min": ("minsi", "minui", "minimumf")}
_RFC_KINDS = {"add": "sum", "mul": "prod", "max": "max", "min": "min"}


def _value(builder, arg: ast.AST, what: str):
    value = builder.visit(arg)
    if not (sem.is_const(value) or sem.is_tile(value) or sem.is_scalar(value)):
        raise builder.error(arg, f"type mismatch: {what} must be a number, scalar or tile value, got {describe(value)}")
    return value


def _tile(builder, arg: ast.AST, op: str):
    value = builder.visit(arg)
    if not sem.is_tile(value):
        raise builder.error(arg, f"type mismatch: {op} expects a tile value, got {describe(value)}")
    return value


def _dtype(builder, arg: ast.AST):
    dt = builder.constexpr(arg, "dtype")
    if not isinstance(dt, lang.dtype):
        raise builder.error(arg, f"dtype must be an xetile_dsl dtype such as xt.float32, got {dt!r}")
    return dt


# ----------------------------------------------------------------------------- arithmetic
@LANGUAGE.register("cdiv")
def build_cdiv(builder, node: ast.Call):
    """``xt.cdiv(a, b)``: folded for constexprs (Python's exact ceiling), else ``(a + b -
    1) // b`` on integer scalars or tiles (equal to the ceiling for ``b > 0``)."""
    args = _bind(builder, node)
    a, b = (_value(builder, args[name], f"cdiv's {name!r}") for name in ("a", "b"))
    if sem.is_const(a) and sem.is_const(b):
        try:
            return lang.cdiv(a, b)
        except UsageError as exc:
            raise builder.error(node, str(exc)) from None
    for value, arg in ((a, args["a"]), (b, args["b"])):
        if isinstance(value, float) or (isinstance(value, sem.SSAValue) and is_float(sem.elem_of(value))):
            raise builder.error(arg, f"cdiv takes integers (ceil division), got {describe(value)}")
    bump = binop(builder, ast.Sub(), b, 1, node)
    return binop(builder, ast.FloorDiv(), binop(builder, ast.Add(), a, bump, node), b, node)


# ----------------------------------------------------------------------------- creation
@LANGUAGE.register("zeros")
def build_zeros(builder, node: ast.Call):
    args = _bind(builder, node)
    (shape, rank), dt = one_d.shape_arg(builder, args["shape"], "the shape"), _dtype(builder, args["dtype"])
    return ranks.mark(builder, sem.constant(builder, 0, ir_type(dt.name), shape), rank)


@LANGUAGE.register("full")
def build_full(builder, node: ast.Call):
    args = _bind(builder, node)
    (shape, rank), dt = one_d.shape_arg(builder, args["shape"], "the shape"), _dtype(builder, args["dtype"])
    value = builder.visit(args["value"])
    if sem.is_const(value):
        sem.check_fits(builder, value, ir_type(dt.name), args["value"], "the fill value")
        return ranks.mark(builder, sem.constant(builder, value, ir_type(dt.name), shape), rank)
    if sem.is_tile(value) and ranks.rank_of(builder, value) != 0:
        raise builder.error(args["value"], f"full: the fill value must be a number or a scalar, got {describe(value)}")
    return ranks.with_rank(builder, sem.coerce(builder, value, ir_type(dt.name), shape, args["value"]), rank)


@LANGUAGE.register("arange")
def build_arange(builder, node: ast.Call):
    args = _bind(builder, node)
    start, end = (builder.constexpr(args[k], f"arange's {k}") for k in ("start", "end"))
    if not (isinstance(start, int) and isinstance(end, int)) or end <= start:
        raise builder.error(node, f"arange needs integer bounds with start < end, got {start!r}, {end!r}")
    elem = ir_type(_dtype(builder, args["dtype"]).name) if "dtype" in args else i32
    return ranks.mark(builder, sem.dense(builder, list(range(start, end)), elem, (1, end - start)), 1)


# ----------------------------------------------------------------------------- casts, select
@LANGUAGE.register("astype")
def build_astype(builder, node: ast.Call):
    args = _bind(builder, node)
    value, dt = _value(builder, args["x"], "astype's input"), _dtype(builder, args["dtype"])
    saturate = builder.constexpr(args["saturate"], "saturate") if "saturate" in args else False
    if not isinstance(saturate, bool):
        raise builder.error(args["saturate"], f"saturate must be True or False, got {saturate!r}")
    if saturate and dt.name not in FP8_TYPES:
        raise builder.error(args["saturate"], f"saturate=True applies to fp8 results (xt.float8_e4m3fn, "
                            f"xt.float8_e5m2), not {dt!r}")
    if sem.is_const(value):
        return float(value) if dt.is_float else int(value)
    return sem.convert(builder, value, ir_type(dt.name), node, saturate)


@LANGUAGE.register("where")
def build_where(builder, node: ast.Call):
    args = _bind(builder, node)
    cond = _value(builder, args["condition"], "the condition")
    x, y = _value(builder, args["x"], "x"), _value(builder, args["y"], "y")
    return select(builder, cond, x, y, node)


def select(builder, cond, x, y, node: ast.AST):
    """``x if cond else y`` element-wise, broadcasting all three (``arith.select``)."""
    if sem.is_const(cond):
        return x if cond else y
    if sem.elem_of(cond) != i1:
        raise builder.error(node, f"type mismatch: the condition must be a comparison result (i1), got "
                            f"{sem.describe_type(sem.elem_of(cond))}")
    elem = sem.operand_type((x, y))
    shape = sem.broadcast_shapes(builder, [sem.shape_of(v) for v in (cond, x, y)], node)
    if shape is not None and elem == sem.INDEX:
        elem = i32  # ints (numbers, program ids) chosen into a tile: an int32 tile, as in arithmetic
    c = sem.coerce(builder, cond, i1, shape, node)
    a, b = (sem.coerce(builder, v, elem, shape, node) for v in (x, y))
    return builder.emit(av.SelectOp(c, a, b)).result


# ----------------------------------------------------------------------------- math
def _float_operand(builder, node: ast.Call, name: str):
    args = _bind(builder, node)
    value = _value(builder, args["x"], f"{name}'s input")
    if sem.is_const(value):
        return value, None
    elem = sem.elem_of(value)
    return (value if is_float(elem) else sem.convert(builder, value, f32, node)), args


def _make_unary(name: str):
    def build(builder, node: ast.Call):
        value, _ = _float_operand(builder, node, name)
        if sem.is_const(value):
            return _FOLD[name](float(value))
        elem = sem.elem_of(value)
        if bit_width(elem) < 32:
            # f16/bf16: compute in f32 and round once, so intermediates (exp(-x) inside
            # sigmoid, say) cannot overflow or lose the result's subnormals
            wide = _unary_in_own_type(builder, name, sem.convert(builder, value, f32, node))
            return sem.convert(builder, wide, elem, node)
        return _unary_in_own_type(builder, name, value)

    build.__name__ = f"build_{name}"
    build.__doc__ = f"``xt.{name}(x)``"
    return build


def _unary_in_own_type(builder, name: str, value):
    """``name`` applied to a float tile or scalar in its own type."""
    if name == "sigmoid":
        return _sigmoid(builder, value)
    return builder.emit(_MATH[name](value)).result


def _sigmoid(builder, x):
    shape, elem = sem.shape_of(x), sem.elem_of(x)
    one = sem.constant(builder, 1.0, elem, shape)
    e = builder.emit(math.ExpOp(builder.emit(arith.NegfOp(x)).result)).result
    return builder.emit(arith.DivfOp(one, builder.emit(arith.AddfOp(one, e)).result)).result


for _name in list(_MATH) + ["sigmoid"]:
    LANGUAGE.register(_name)(_make_unary(_name))


def _make_binary(name: str):
    op_class, fold = _BINARY[name]
    first, second = ("y", "x") if name == "atan2" else ("x", "y")

    def build(builder, node: ast.Call):
        args = _bind(builder, node)
        a, b = (_value(builder, args[k], f"{name}'s {k}") for k in (first, second))
        if sem.is_const(a) and sem.is_const(b):
            try:
                return fold(float(a), float(b))
            except (ValueError, OverflowError) as exc:
                raise builder.error(node, f"cannot fold {name}({a!r}, {b!r}): {exc}") from None
        elem = sem.operand_type((a, b))
        elem = elem if is_float(elem) else f32
        (x, y), _, _ = sem.unify(builder, (a, b), node, f32 if bit_width(elem) < 32 else elem)
        result = builder.emit(op_class(x, y)).result
        return sem.convert(builder, result, elem, node)   # f16/bf16: computed in f32, rounded once

    build.__name__ = f"build_{name}"
    build.__doc__ = f"``xt.{name}``"
    return build


for _name in _BINARY:
    LANGUAGE.register(_name)(_make_binary(_name))


@LANGUAGE.register("fmod")
def build_fmod(builder, node: ast.Call):
    """``xt.fmod(x, y)``: ``arith.remf`` on floats (exact, so no f32 detour), the truncating
    ``arith.remsi``/``remui`` on integers (not ``%``'s floor modulo)."""
    args = _bind(builder, node)
    a, b = _value(builder, args["x"], "fmod's x"), _value(builder, args["y"], "fmod's y")
    if sem.is_const(a) and sem.is_const(b):
        if isinstance(a, float) or isinstance(b, float):
            return pymath.fmod(a, b) if b != 0 else float("nan")
        return a if b == 0 else int(pymath.fmod(a, b))
    (x, y), elem, _ = sem.unify(builder, (a, b), node)
    if is_float(elem):
        return builder.emit(av.RemFOp(x, y)).result
    if elem == i1:
        (x, y), elem, _ = sem.unify(builder, (x, y), node, i32)
    return builder.emit((arith.RemUIOp if is_unsigned(elem) else arith.RemSIOp)(x, y)).result


def _make_predicate(name: str):
    def build(builder, node: ast.Call):
        args = _bind(builder, node)
        value = _value(builder, args["x"], f"{name}'s input")
        if sem.is_const(value):
            v = float(value)
            return {"isnan": pymath.isnan, "isinf": pymath.isinf, "isfinite": pymath.isfinite,
                    "signbit": lambda t: pymath.copysign(1.0, t) < 0}[name](v)
        x = value if is_float(sem.elem_of(value)) else sem.convert(builder, value, f32, node)
        shape, elem = sem.shape_of(x), sem.elem_of(x)
        if name == "isnan":
            return builder.emit(av.CmpfOp(x, x, "uno")).result
        if name == "signbit":   # copysign keeps the sign bit of -0.0 and of NaNs, which a compare cannot see
            one = builder.emit(math.CopySignOp(sem.constant(builder, 1.0, elem, shape), x)).result
            return builder.emit(av.CmpfOp(one, sem.constant(builder, 0.0, elem, shape), "olt")).result
        magnitude = builder.emit(math.AbsFOp(x)).result
        inf = sem.constant(builder, float("inf"), elem, shape)
        return builder.emit(av.CmpfOp(magnitude, inf, "oeq" if name == "isinf" else "one")).result

    build.__name__ = f"build_{name}"
    build.__doc__ = f"``xt.{name}(x)`` -> i1"
    return build


for _name in ("isnan", "isinf", "isfinite", "signbit"):
    LANGUAGE.register(_name)(_make_predicate(_name))


@LANGUAGE.register("abs")
def build_abs(builder, node: ast.Call):
    args = _bind(builder, node)
    return abs_value(builder, _value(builder, args["x"], "abs's input"))


def abs_value(builder, value):
    """``|value|`` of a number (folded), runtime scalar or tile value."""
    if sem.is_const(value):
        return abs(value)
    elem = sem.elem_of(value)
    if is_float(elem):
        return builder.emit(math.AbsFOp(value)).result
    return value if (is_unsigned(elem) or elem == i1) else builder.emit(math.AbsIOp(value)).result


def _minmax(builder, node: ast.Call, ops):
    args = _bind(builder, node)
    return minmax_values(builder, _value(builder, args["x"], "x"), _value(builder, args["y"], "y"), ops, node)


#: the (signed, unsigned, float) ops of xt.maximum and xt.minimum
MAXIMUM = (arith.MaxSIOp, arith.MaxUIOp, arith.MaximumfOp)
MINIMUM = (arith.MinSIOp, arith.MinUIOp, arith.MinimumfOp)


def minmax_values(builder, x, y, ops, node: ast.AST):
    """The element-wise max or min (``ops``: MAXIMUM or MINIMUM) of two operands."""
    if sem.is_const(x) and sem.is_const(y):
        return max(x, y) if ops[0] is arith.MaxSIOp else min(x, y)
    (a, b), elem, _ = sem.unify(builder, (x, y), node)
    cls = ops[2] if is_float(elem) else ops[1] if (is_unsigned(elem) or elem == i1) else ops[0]
    return builder.emit(cls(a, b)).result


@LANGUAGE.register("maximum")
def build_maximum(builder, node: ast.Call):
    return _minmax(builder, node, MAXIMUM)


@LANGUAGE.register("minimum")
def build_minimum(builder, node: ast.Call):
    return _minmax(builder, node, MINIMUM)


@LANGUAGE.register("fma")
def build_fma(builder, node: ast.Call):
    args = _bind(builder, node)
    vals = [_value(builder, args[k], k) for k in ("x", "y", "z")]
    if all(sem.is_const(v) for v in vals):
        return vals[0] * vals[1] + vals[2]
    elem = sem.operand_type(vals)
    (a, b, c), _, _ = sem.unify(builder, vals, node, elem if is_float(elem) else f32)
    return builder.emit(math.FmaOp(a, b, c)).result


# ----------------------------------------------------------------------------- reductions
def _axes(builder, arg: ast.AST | None, x) -> list[int]:
    """The IR axes a reduction of ``x`` along ``arg`` reduces: a 1-D value's axis 0 (or
    None) is the IR's axis 1 of its ``[1, N]`` row (frontend/ranks.py)."""
    axis = builder.constexpr(arg, "axis") if arg is not None else None
    rank = ranks.rank_of(builder, x)
    if rank < 2:
        if rank == 0 or axis not in (None, 0, -1, [0], (0,)):
            raise builder.error(arg or builder._node, f"axis must be 0 or None for a {rank}-D value (shape "
                                f"{ranks.fmt_shape(ranks.logical_shape(builder, x))}), got {axis!r}")
        return [1]
    axes = list(range(rank)) if axis is None else [axis] if isinstance(axis, int) else list(axis)
    if not axes or any(not isinstance(a, int) or not 0 <= a < rank for a in axes):
        raise builder.error(arg or builder._node, f"axis must be 0, 1, a list of them or None, got {axis!r}")
    return sorted(set(axes))


def _reduced(builder, x, result):
    """The reduction ``result`` of ``x``: 0-D when ``x`` is 1-D (Triton's scalar result)."""
    return ranks.mark(builder, result, 0) if ranks.rank_of(builder, x) == 1 else result


def reduce(builder, name: str, x, axes: list[int]):
    """``xetile.tile_reduce`` of ``x`` along ``axes`` for reduction ``name`` (sum, prod, max, min).
    Both axes are two reductions, along 1 then 0: a workgroup tile is distributed one
    dimension at a time (wg-to-sg), and within a subgroup the rows reduce lane-locally first."""
    if len(axes) > 1:
        for axis in sorted(axes, reverse=True):
            x = reduce(builder, name, x, [axis])
        return x
    elem = sem.elem_of(x)
    sem.refuse_fp8(builder, (x,), builder._node)
    if elem == i1:
        x, elem = sem.convert(builder, x, i32, builder._node), i32
    kind = _REDUCE[name][2 if is_float(elem) else 1 if is_unsigned(elem) else 0]
    return builder.emit(xetile.TileReduceOp(kind, x, axes)).result


def _make_reduction(name: str):
    def build(builder, node: ast.Call):
        args = _bind(builder, node)
        x = _tile(builder, args["x"], name)
        return _reduced(builder, x, reduce(builder, name, x, _axes(builder, args.get("axis"), x)))

    build.__name__ = f"build_{name}"
    build.__doc__ = f"``xt.{name}(x, axis)`` -> tile_reduce"
    return build


for _name in _REDUCE:
    LANGUAGE.register(_name)(_make_reduction(_name))


def _arg_extreme(builder, node: ast.Call, name: str):
    """Index of the first max/min along one axis: compare with the reduced extreme, keep the
    matching positions' indices, take their minimum."""
    args = _bind(builder, node)
    x = _tile(builder, args["x"], f"arg{name}")
    shape = sem.shape_of(x)
    axes = _axes(builder, args["axis"], x)
    if len(axes) != 1:
        raise builder.error(args["axis"], f"arg{name} reduces along one axis (0 or 1), got {axes}")
    axis = axes[0]
    extreme = reduce(builder, name, x, [axis])
    hit = builder.emit((av.CmpfOp if is_float(sem.elem_of(x)) else av.CmpiOp)(
        x, sem.stretch(builder, extreme, shape, node), "oeq" if is_float(sem.elem_of(x)) else "eq")).result
    n = shape[axis]
    idx_shape = [1, 1]
    idx_shape[axis] = n
    index = sem.stretch(builder, sem.dense(builder, list(range(n)), i32, idx_shape), shape, node)
    cand = builder.emit(av.SelectOp(hit, index, sem.constant(builder, n, i32, shape))).result
    return _reduced(builder, x, reduce(builder, "min", cand, [axis]))


@LANGUAGE.register("argmax")
def build_argmax(builder, node: ast.Call):
    return _arg_extreme(builder, node, "max")


@LANGUAGE.register("argmin")
def build_argmin(builder, node: ast.Call):
    return _arg_extreme(builder, node, "min")


@LANGUAGE.register("tile_reduce")
def build_tile_reduce(builder, node: ast.Call):
    args = _bind(builder, node)
    kind = builder.constexpr(args["kind"], "the reduction kind")
    x = _tile(builder, args["x"], "tile_reduce")
    axes = _axes(builder, args["axis"], x)
    if kind in _RFC_KINDS:
        return _reduced(builder, x, reduce(builder, _RFC_KINDS[kind], x, axes))
    out = x
    for axis in sorted(axes, reverse=True):        # one axis at a time, as reduce() does
        out = builder.emit(xetile.TileReduceOp(str(kind), out, [axis])).result
    return _reduced(builder, x, out)


# ----------------------------------------------------------------------------- shape ops
@LANGUAGE.register("broadcast_to", "tile_broadcast")
def build_broadcast_to(builder, node: ast.Call):
    args = _bind(builder, node)
    x = _value(builder, args["x"], "broadcast_to's input")
    shape, rank = one_d.shape_arg(builder, args["shape"], "the shape")
    if sem.is_tile(x) and ranks.rank_of(builder, x) > rank:
        raise builder.error(node, f"broadcast_to: cannot broadcast a {ranks.rank_of(builder, x)}-D value of shape "
                            f"{ranks.fmt_shape(ranks.logical_shape(builder, x))} to the {rank}-D shape "
                            f"{ranks.fmt_shape(shape[2 - rank:])}")
    elem = sem.operand_type((x,))
    return ranks.with_rank(builder, sem.coerce(builder, x, elem, tuple(shape), node), rank)


@LANGUAGE.register("transpose", "tile_transpose")
def build_transpose(builder, node: ast.Call):
    args = _bind(builder, node)
    x = _tile(builder, args["x"], "transpose")
    m, n = sem.shape_of(x)
    wg = _wg_map_arg(builder, args, (n, m), "transpose")
    src = _wg_map_arg(builder, {"wg_map": args["source_wg_map"]} if "source_wg_map" in args else {}, (m, n),
                      "transpose (source_wg_map)")
    folded = _transposed_constant(builder, x, m, n) if wg is None and src is None else None
    if folded is not None:
        return folded
    return builder.emit(xetile.TileTransposeOp(x, [1, 0], VectorType(sem.elem_of(x), [n, m]), wg, src)).result


def _transposed_constant(builder, x, m: int, n: int):
    """The transpose of a constant tile (``xt.transpose(xt.arange(0, N))``, the index column
    of a mask) as a constant of the transposed shape, None for other values.  A constant
    column is lane-local everywhere after it, where a tile_transpose would be a cross-lane
    exchange (SLM or a per-lane read of the whole row) and would keep the tiles of its
    block from being coalesced into large 2D block messages (lowering/rewrites/block_messages.py)."""
    owner = x.owner if isinstance(x, OpResult) else None
    if not isinstance(owner, arith.ConstantOp) or not isinstance(owner.value, DenseIntOrFPElementsAttr):
        return None
    values = owner.value.get_values()
    if len(values) == 1:
        values = values * (m * n)  # a splat
    return sem.dense(builder, [values[i * n + j] for j in range(n) for i in range(m)], sem.elem_of(x), (n, m))

