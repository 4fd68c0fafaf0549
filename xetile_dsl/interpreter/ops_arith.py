"""arith and math ops on numpy scalars and arrays (MLIR semantics: integers wrap,
``*si``/``*ui`` choose signed/unsigned, floats round to the result type)."""
from __future__ import annotations

import importlib
import math

import numpy as np
from xdsl.dialects import arith, math as xmath, vector
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
)

from ..dialects import _arith_vector as av
from ..dialects import xetile
from ..dialects._math_ops import ErfcOp
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
    """``fn`` with the integer division semantics of docs/decisions/019-arithmetic-semantics.md: by
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
    for op_class, fn in table.items():
        if checked:
            fn = _by_zero(fn, remainder=op_class.name.startswith("arith.rem"))

        def run(_run, op, a, b, fn=fn):
            if unsigned:
                a, b = _u(a), _u(b)
            with np.errstate(all="ignore"):
                return cast(fn(a, b), result_dtype(op))
        impl(op_class)(run)


def _shift_amount(b, a):
    return np.asarray(b).astype(np.int64) % (np.asarray(a).dtype.itemsize * 8)


_register_binary({
    arith.AddiOp: np.add, arith.SubiOp: np.subtract, arith.MuliOp: np.multiply, arith.AndIOp: np.bitwise_and,
    arith.OrIOp: np.bitwise_or, arith.XOrIOp: np.bitwise_xor, arith.MaxSIOp: np.maximum, arith.MinSIOp: np.minimum,
    arith.ShLIOp: lambda a, b: np.left_shift(a, _shift_amount(b, a).astype(np.asarray(a).dtype)),
    arith.ShRSIOp: lambda a, b: np.right_shift(a, _shift_amount(b, a).astype(np.asarray(a).dtype)),
    arith.AddfOp: np.add, arith.SubfOp: np.subtract, arith.MulfOp: np.multiply, arith.DivfOp: np.divide,
    arith.MaximumfOp: np.maximum, arith.MinimumfOp: np.minimum, arith.MaxnumfOp: np.fmax, arith.MinnumfOp: np.fmin,
})
_register_binary({arith.MaxUIOp: np.maximum, arith.MinUIOp: np.minimum,
                  arith.ShRUIOp: lambda a, b: np.right_shift(a, _shift_amount(b, a).astype(np.asarray(a).dtype))},
                 unsigned=True)
_register_binary({arith.DivSIOp: _trunc_div,
                  arith.FloorDivSIOp: lambda a, b: np.floor_divide(np.asarray(a, np.int64), b),
                  arith.CeilDivSIOp: lambda a, b: -np.floor_divide(-np.asarray(a, np.int64), b),
                  arith.RemSIOp: lambda a, b: np.fmod(np.asarray(a, np.int64), b)}, checked=True)
_register_binary({arith.DivUIOp: np.floor_divide, arith.RemUIOp: np.remainder,
                  arith.CeilDivUIOp: lambda a, b: (a + b - 1) // b}, unsigned=True, checked=True)


@impl(arith.NegfOp)
def _negf(run, op, a):
    return cast(np.negative(a), result_dtype(op))


_CMPI = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater, 5: np.greater_equal}


@impl(arith.CmpiOp, av.CmpiOp)
def _cmpi(run, op, a, b):
    pred = op.predicate.value.data
    if pred >= 6:  # ult ule ugt uge
        a, b, pred = _u(a), _u(b), pred - 4
    return cast(_CMPI[pred](a, b), np.dtype(np.bool_))


_CMPF = {1: np.equal, 2: np.greater, 3: np.greater_equal, 4: np.less, 5: np.less_equal, 6: np.not_equal}


@impl(arith.CmpfOp, av.CmpfOp)
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


@impl(arith.SelectOp, av.SelectOp)
def _select(run, op, cond, a, b):
    return cast(np.where(cond, a, b), result_dtype(op))


@impl(arith.ConstantOp)
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
# the casts our dialect redefines for vectors (_arith_vector) exist in xDSL's form too
@impl(arith.ExtFOp, arith.TruncFOp, arith.SIToFPOp, av.SIToFPOp, arith.ExtSIOp, av.ExtSIOp, arith.TruncIOp,
      av.TruncIOp, arith.IndexCastOp, av.IndexCastOp, arith.FPToSIOp, av.FPToSIOp)
def _convert(run, op, a):
    dt = result_dtype(op)
    if numpy_kind(dt) in "iu" and numpy_is_float(np.asarray(a).dtype):
        if not np.all(np.isfinite(np.asarray(a, np.float64))):
            raise InterpreterError(f"{op.name}: cannot convert inf/NaN to an integer")
        return cast(np.trunc(np.asarray(a, np.float64)), dt)
    return cast(a, dt)


@impl(arith.ExtUIOp, av.ExtUIOp, arith.UIToFPOp, av.UIToFPOp)
def _convert_unsigned(run, op, a):
    return cast(_u(a), result_dtype(op))


@impl(arith.FPToUIOp, av.FPToUIOp)
def _fptoui(run, op, a):
    return cast(np.trunc(np.asarray(a, np.float64)), result_dtype(op))


@impl(arith.BitcastOp)
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
_ERFC = np.vectorize(math.erfc, otypes=[np.float64])
_MATH_UNARY = {
    xmath.AbsFOp: np.abs, xmath.CeilOp: np.ceil, xmath.FloorOp: np.floor, xmath.TruncOp: np.trunc,
    xmath.RoundEvenOp: np.rint, xmath.RoundOp: lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x),  # C round; round(-0.0) is -0.0
    xmath.ExpOp: np.exp, xmath.Exp2Op: np.exp2, xmath.ExpM1Op: np.expm1, xmath.LogOp: np.log,
    xmath.Log2Op: np.log2, xmath.Log10Op: np.log10, xmath.Log1pOp: np.log1p, xmath.SqrtOp: np.sqrt,
    xmath.RsqrtOp: lambda x: 1.0 / np.sqrt(x), xmath.SinOp: np.sin, xmath.CosOp: np.cos, xmath.TanOp: np.tan,
    xmath.TanhOp: np.tanh, xmath.SinhOp: np.sinh, xmath.CoshOp: np.cosh, xmath.AsinOp: np.arcsin,
    xmath.AcosOp: np.arccos, xmath.AtanOp: np.arctan, xmath.AsinhOp: np.arcsinh, xmath.AcoshOp: np.arccosh,
    xmath.AtanhOp: np.arctanh, xmath.CbrtOp: np.cbrt, xmath.ErfOp: _ERF, ErfcOp: _ERFC,
}
for _op_class, _fn in _MATH_UNARY.items():
    impl(_op_class)(_float_unary(_fn))


def _float_binary(fn):
    def run(_run, op, a, b):
        with np.errstate(all="ignore"):
            return cast(fn(np.asarray(a, np.float64), np.asarray(b, np.float64)), result_dtype(op))
    return run


for _op_class, _fn in {xmath.PowFOp: np.power, xmath.Atan2Op: np.arctan2, xmath.CopySignOp: np.copysign,
                       av.RemFOp: np.fmod}.items():   # fmod is exact: f64 gives the f32/f16 result
    impl(_op_class)(_float_binary(_fn))


@impl(xmath.FmaOp, vector.FMAOp)
def _fma(run, op, a, b, c):
    f64 = np.float64
    return cast(np.asarray(a, f64) * np.asarray(b, f64) + np.asarray(c, f64), result_dtype(op))


@impl(xmath.AbsIOp)
def _absi(run, op, a):
    with np.errstate(all="ignore"):
        return cast(np.abs(a), result_dtype(op))


# ----------------------------------------------------------------------------- extern builtins
@impl(xetile.ExternElementwiseOp)
def _extern(run, op, *args):
    """``xt.extern``: the host function named by ``numpy_impl`` on the operands in their own
    types, cast to the result type; refused when the kernel gave none."""
    name = op.numpy_impl.data
    if not name:
        raise InterpreterError(f"xt.extern(\"{op.callee.data}\") has no numpy_impl, so the interpreter cannot run "
                               f"it; pass the host equivalent, e.g. xt.extern(\"{op.callee.data}\", ..., "
                               f"numpy_impl=np.{op.callee.data})")
    fn = _host_function(name)
    with np.errstate(all="ignore"):
        out = fn(*(np.asarray(a) for a in args))
    return cast(np.asarray(out), result_dtype(op))


def _host_function(name: str):
    """The function ``module:qualname`` names (as the frontend recorded it)."""
    module, _, qualname = name.partition(":")
    try:
        value = importlib.import_module(module)
        for part in qualname.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as exc:
        raise InterpreterError(f"xt.extern's numpy_impl {name} cannot be found: {exc}") from None
    return value


__all__ = ["result_dtype"]
