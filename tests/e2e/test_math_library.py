"""The math library end to end: each function on f32, f16 and bf16 tiles on the CPU device
(PVC and ARC lane layouts) and in the interpreter, against numpy in f64.

f32 tolerances are OpenCL's, full profile: OpenCL C specification, "Relative Error as
ULPs", table "ULP values for single precision built-in math functions" (the bound of the
OpenCL builtin each function lowers to; 0 means correctly rounded).  f16 and bf16 compute
in f32 and round once, so the result is the correctly rounded value or a neighbour (the
f32 error is far below half a 16-bit ulp except within a hair of a rounding midpoint);
the exact functions (floor, ceil, trunc, round, fmod, copysign) are exact in every type."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from kernels.math_library import math_kernel

TARGETS = ["cpu", "cpu-arc", "interpret"]
B = 8   # rows per function
_ERF = np.vectorize(math.erf, otypes=[np.float64])

# name -> (numpy f64 reference, input range, OpenCL f32 ulp bound)
UNARY = {
    "tan": (np.tan, (-1.5, 1.5), 5), "asin": (np.arcsin, (-0.999, 0.999), 4),
    "acos": (np.arccos, (-0.999, 0.999), 4), "atan": (np.arctan, (-10, 10), 5),
    "sinh": (np.sinh, (-10, 10), 4), "cosh": (np.cosh, (-10, 10), 4), "asinh": (np.arcsinh, (-10, 10), 4),
    "acosh": (np.arccosh, (1, 100), 4), "atanh": (np.arctanh, (-0.999, 0.999), 5),
    "log10": (np.log10, (1e-3, 1e3), 3), "log1p": (np.log1p, (-0.9, 10), 2), "expm1": (np.expm1, (-10, 10), 3),
    "cbrt": (np.cbrt, (-1000, 1000), 2), "exp2": (np.exp2, (-20, 20), 3), "log2": (np.log2, (1e-3, 1e3), 3),
    "tanh": (np.tanh, (-10, 10), 5), "erf": (_ERF, (-4, 4), 16), "rsqrt": (lambda v: 1 / np.sqrt(v), (1e-3, 1e3), 2),
    "floor": (np.floor, (-100, 100), 0), "ceil": (np.ceil, (-100, 100), 0), "trunc": (np.trunc, (-100, 100), 0),
    "round": (lambda v: np.copysign(np.floor(np.abs(v) + 0.5), v), (-100, 100), 0),
    "erfc": (np.vectorize(math.erfc, otypes=[np.float64]), (-3, 8), 16),
}
# name -> (reference, x range, y range, ulp bound)
BINARY = {
    "atan2": (np.arctan2, (-10, 10), (-10, 10), 6), "pow": (np.power, (0.1, 10), (-5, 5), 16),
    "fmod": (np.fmod, (-100, 100), (0.5, 7), 0), "copysign": (np.copysign, (-100, 100), (-1, 1), 0),
}
PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit}
U, N2, NP = len(UNARY), len(BINARY), len(PREDICATES)


def _inputs(dtype):
    """x, y and the f64 values they hold (inputs rounded to ``dtype`` first)."""
    rng = np.random.default_rng(7)
    rows = [rng.uniform(lo, hi, (B, 32)) for _, (lo, hi), _ in UNARY.values()]
    rows[list(UNARY).index("log10")] = np.exp(rng.uniform(np.log(1e-3), np.log(1e3), (B, 32)))
    for name in ("floor", "ceil", "trunc", "round"):    # halfway cases, signed zeros, integers
        rows[list(UNARY).index(name)][0, :12] = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.0, 0.0, 3.0, -3.0, 99.5, -99.5]
    ys = []
    for _, (xlo, xhi), (ylo, yhi), _ in BINARY.values():
        rows.append(rng.uniform(xlo, xhi, (B, 32)))
        ys.append(rng.uniform(ylo, yhi, (B, 32)))
    ys[list(BINARY).index("fmod")] *= np.where(rng.random((B, 32)) < 0.5, -1, 1)   # both signs of y
    special = np.resize([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-30, -7.5], (B, 32))
    rows += [special] * NP
    x, y = np.concatenate(rows).astype(dtype), np.concatenate(ys).astype(dtype)
    return x, y


def _reference(x, y):
    xs, ys = x.astype(np.float64), y.astype(np.float64)
    out = []
    with np.errstate(all="ignore"):
        for i, (fn, _, _) in enumerate(UNARY.values()):
            out.append(fn(xs[i * B:(i + 1) * B]))
        for j, (fn, _, _, _) in enumerate(BINARY.values()):
            out.append(fn(xs[(U + j) * B:(U + j + 1) * B], ys[j * B:(j + 1) * B]))
        p = xs[(U + N2) * B:(U + N2 + 1) * B]
        out += [fn(p).astype(np.float64) for fn in PREDICATES.values()]
    return np.concatenate(out)


def _bounds() -> np.ndarray:
    per_fn = [b for _, _, b in UNARY.values()] + [b for *_, b in BINARY.values()] + [0] * NP
    return np.repeat(np.array(per_fn, np.float64), B * 32).reshape(-1, 32)


def _f32_ulp_error(got, exact):
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


@pytest.mark.parametrize("target", TARGETS)
def test_f32_within_opencl_ulps(target):
    x, y = _inputs(np.float32)
    o = np.zeros_like(x)
    math_kernel.on(target)[(1,)](x, y, o, C=32)
    exact, bound = _reference(x, y), _bounds()
    err = _f32_ulp_error(o, exact)
    ok = np.where(bound == 0, o.astype(np.float64) == exact, err <= bound)
    names = list(UNARY) + list(BINARY) + list(PREDICATES)
    bad = sorted({names[i // B] for i in np.argwhere(~ok)[:, 0]})
    assert not bad, f"{target}: beyond the OpenCL bound: {bad}"
    # -0.0 stays -0.0 where C says so (floor, ceil, trunc, round of -0.0; copysign)
    np.testing.assert_array_equal(np.signbit(o[exact == 0]), np.signbit(exact[exact == 0]))


def _neighbour_ok(got, exact, dtype):
    rounded = exact.astype(dtype)
    g = got.astype(np.float64)
    lo, hi = np.nextafter(rounded, dtype(-np.inf)), np.nextafter(rounded, dtype(np.inf))
    return (g == rounded.astype(np.float64)) | (g == lo.astype(np.float64)) | (g == hi.astype(np.float64))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16], ids=["f16", "bf16"])
def test_16_bit_floats_round_once(target, dtype):
    x, y = _inputs(dtype)
    o = np.zeros_like(x)
    math_kernel.on(target)[(1,)](x, y, o, C=32)
    exact, bound = _reference(x, y), _bounds()
    finite = np.isfinite(exact.astype(dtype))       # sinh/cosh overflow f16's range: inf there too
    ok = np.where(bound == 0, o.astype(np.float64) == exact.astype(dtype).astype(np.float64),
                  np.where(finite, _neighbour_ok(o, exact, dtype), o.astype(np.float64) == exact.astype(dtype)))
    names = list(UNARY) + list(BINARY) + list(PREDICATES)
    bad = sorted({names[i // B] for i in np.argwhere(~ok)[:, 0]})
    assert not bad, f"{target} {dtype.__name__}: {bad}"


@xd.jit
def int_fmod_kernel(x, y, o, q):
    """``xt.fmod`` of int32 tiles (C's truncating remainder) next to ``%`` (floor modulo)."""
    a = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    b = xt.load_tile(xt.init_tile(y, [0, 0], [8, 16]))
    xt.store_tile(xt.fmod(a, b), xt.init_tile(o, [0, 0], [8, 16]))
    xt.store_tile(a % b, xt.init_tile(q, [0, 0], [8, 16]))


@pytest.mark.parametrize("target", TARGETS)
def test_int_fmod_truncates_where_percent_floors(target):
    rng = np.random.default_rng(3)
    x = rng.integers(-1000, 1000, (8, 16)).astype(np.int32)
    y = rng.integers(1, 30, (8, 16)).astype(np.int32) * np.where(rng.random((8, 16)) < 0.5, -1, 1).astype(np.int32)
    y[0, 0] = 0                                   # by zero: the remainder is x (decision 019)
    o, q = np.zeros_like(x), np.zeros_like(x)
    int_fmod_kernel.on(target)[(1,)](x, y, o, q)
    safe = np.where(y == 0, 1, y)
    np.testing.assert_array_equal(o, np.where(y == 0, x, np.fmod(x, safe)))
    np.testing.assert_array_equal(q.ravel()[1:], np.mod(x, safe).ravel()[1:])
