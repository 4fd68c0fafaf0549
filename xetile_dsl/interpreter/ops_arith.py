"""arith and math ops on numpy scalars and arrays (MLIR semantics: integers wrap,
``*si``/``*ui`` choose signed/unsigned, floats round to the result type)."""
from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
)

from ..dtypes import numpy_is_float, numpy_kind
from .engine import impl
from .values import InterpreterError, cast, make, np_dtype, unsigned_dtype


def result_dtype(op) -> np.dtype:
    t = op.results[0].type
    return np_dtype(getattr(t, "element_type", t))


def _u(x):
    """``x`` reinterpreted as unsigned (same width)."""
    arr = np.asarray(x)
    return arr.view(unsigned_dtype(arr.dtype)) if arr.dtype != np.bool_ else arr


def _by_zero(fn, remainder: bool):
    """``fn`` with the integer division semantics of design.md ("Integer division"): by
    zero the quotient is 0 and the remainder the dividend, as the compiled kernel does.
    Overflowing quotients (``MIN / -1``) are computed in 64 bits and wrap when cast."""
    def divide(a, b):
        a, b = np.asarray(a), np.asarray(b)
        zero = b == 0
        out = fn(a, np.where(zero, np.ones_like(b), b))
        return np.where(zero, a if remainder else np.zeros_like(out), out)
    return divide


def _trunc_div(a, b):
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def _register_binary(table: dict, unsigned: bool = False, checked: bool = False) -> None:
    for name, fn in table.items():
        if checked:
            fn = _by_zero(fn, remainder=name.startswith("rem"))

        def run(_run, op, a, b, fn=fn):
            if unsigned:
                a, b = _u(a), _u(b)
            with np.errstate(all="ignore"):
                return cast(fn(a, b), result_dtype(op))
        impl(f"arith.{name}")(run)


def _shift_amount(b, a):
    return np.asarray(b).astype(np.int64) % (np.asarray(a).dtype.itemsize * 8)


_register_binary({
    "addi": np.add, "subi": np.subtract, "muli": np.multiply, "andi": np.bitwise_and, "ori": np.bitwise_or,
    "xori": np.bitwise_xor, "maxsi": np.maximum, "minsi": np.minimum,
    "shli": lambda a, b: np.left_shift(a, _shift_amount(b, a).astype(np.asarray(a).dtype)),
    "shrsi": lambda a, b: np.right_shift(a, _shift_amount(b, a).astype(np.asarray(a).dtype)),
    "addf": np.add, "subf": np.subtract, "mulf": np.multiply, "divf": np.divide,
    "maximumf": np.maximum, "minimumf": np.minimum, "maxnumf": np.fmax, "minnumf": np.fmin,
})
_register_binary({"maxui": np.maximum, "minui": np.minimum,
                  "shrui": lambda a, b: np.right_shift(a, _shift_amount(b, a).astype(np.asarray(a).dtype))},
                 unsigned=True)
_register_binary({"divsi": _trunc_div, "floordivsi": lambda a, b: np.floor_divide(np.asarray(a, np.int64), b),
                  "ceildivsi": lambda a, b: -np.floor_divide(-np.asarray(a, np.int64), b),
                  "remsi": lambda a, b: np.fmod(np.asarray(a, np.int64), b)}, checked=True)
_register_binary({"divui": np.floor_divide, "remui": np.remainder,
                  "ceildivui": lambda a, b: (a + b - 1) // b}, unsigned=True, checked=True)


@impl("arith.negf")
def _negf(run, op, a):
    return cast(np.negative(a), result_dtype(op))


_CMPI = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater, 5: np.greater_equal}


@impl("arith.cmpi")
def _cmpi(run, op, a, b):
    pred = op.predicate.value.data
    if pred >= 6:  # ult ule ugt uge
        a, b, pred = _u(a), _u(b), pred - 4
    return cast(_CMPI[pred](a, b), np.dtype(np.bool_))


_CMPF = {1: np.equal, 2: np.greater, 3: np.greater_equal, 4: np.less, 5: np.less_equal, 6: np.not_equal}


@impl("arith.cmpf")
def _cmpf(run, op, a, b):
    pred = op.predicate.value.data
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    unordered = np.isnan(a) | np.isnan(b)
    if pred in (0, 15):
        out = np.full(np.broadcast(a, b).shape, pred == 15)
    elif pred == 7:
        out = ~unordered
    elif pred == 14:
        out = unordered
    elif pred <= 6:
        with np.errstate(invalid="ignore"):
            out = _CMPF[pred](a, b) & ~unordered
    else:
        with np.errstate(invalid="ignore"):
            out = _CMPF[pred - 7](a, b) | unordered
    return cast(out, np.dtype(np.bool_))


@impl("arith.select")
def _select(run, op, cond, a, b):
    return cast(np.where(cond, a, b), result_dtype(op))


@impl("arith.constant")
def _constant(run, op):
    value, t = op.value, op.results[0].type
    if isinstance(value, DenseIntOrFPElementsAttr):
        data = [getattr(v, "data", v) for v in value.get_values()]
        arr = np.asarray(data, np.float64 if numpy_is_float(np_dtype(t.element_type)) else np.int64)
        shape = tuple(t.get_shape())
        arr = np.broadcast_to(arr, shape) if arr.size == 1 else arr.reshape(shape)
        return cast(arr, np_dtype(t.element_type))
    if isinstance(value, (IntegerAttr, FloatAttr)):
        return make(value.value.data, t)
    raise InterpreterError(f"arith.constant: unsupported value {value}")


# ----------------------------------------------------------------------------- casts
@impl("arith.extf", "arith.truncf", "arith.sitofp", "arith.extsi", "arith.trunci", "arith.index_cast",
      "arith.fptosi")
def _convert(run, op, a):
    dt = result_dtype(op)
    if numpy_kind(dt) in "iu" and numpy_is_float(np.asarray(a).dtype):
        if not np.all(np.isfinite(np.asarray(a, np.float64))):
            raise InterpreterError(f"{op.name}: cannot convert inf/NaN to an integer")
        return cast(np.trunc(np.asarray(a, np.float64)), dt)
    return cast(a, dt)


@impl("arith.extui", "arith.uitofp", "arith.index_castui")
def _convert_unsigned(run, op, a):
    return cast(_u(a), result_dtype(op))


@impl("arith.fptoui")
def _fptoui(run, op, a):
    return cast(np.trunc(np.asarray(a, np.float64)), result_dtype(op))


@impl("arith.bitcast")
def _bitcast(run, op, a):
    arr = np.asarray(a)
    out = arr.view(result_dtype(op))
    return out if arr.ndim else out[()]


# ----------------------------------------------------------------------------- math
def _float_unary(fn):
    def run(_run, op, a):
        with np.errstate(all="ignore"):
            return cast(fn(np.asarray(a, np.float64)), result_dtype(op))
    return run


_ERF = np.vectorize(math.erf, otypes=[np.float64])
_MATH_UNARY = {
    "absf": np.abs, "ceil": np.ceil, "floor": np.floor, "trunc": np.trunc, "roundeven": np.rint,
    "round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "cbrt": np.cbrt,
    "erf": _ERF,
}
for _name, _fn in _MATH_UNARY.items():
    impl(f"math.{_name}")(_float_unary(_fn))


def _float_binary(fn):
    def run(_run, op, a, b):
        with np.errstate(all="ignore"):
            return cast(fn(np.asarray(a, np.float64), np.asarray(b, np.float64)), result_dtype(op))
    return run


for _name, _fn in {"powf": np.power, "atan2": np.arctan2, "copysign": np.copysign}.items():
    impl(f"math.{_name}")(_float_binary(_fn))


@impl("math.fma", "vector.fma")
def _fma(run, op, a, b, c):
    f64 = np.float64
    return cast(np.asarray(a, f64) * np.asarray(b, f64) + np.asarray(c, f64), result_dtype(op))


@impl("math.absi")
def _absi(run, op, a):
    with np.errstate(all="ignore"):
        return cast(np.abs(a), result_dtype(op))


__all__ = ["result_dtype"]
