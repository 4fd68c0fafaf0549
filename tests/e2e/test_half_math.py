"""Transcendental math on f16 and bf16 tiles is computed in f32 and rounded once, so every
result is the correctly rounded value or a neighbour (the f32 functions' few-ulp error
can move a value that lies within a hair of a rounding midpoint): checked over every f16
number (all 65536 bit patterns) and a bf16 sweep against numpy in f64, on the CPU device
in both lane layouts and in the interpreter.  Before, ``sigmoid`` of f16 inputs below
about -11 overflowed ``exp(-x)`` and returned 0 instead of a subnormal."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

ROWS, COLS = 8, 32   # one small tile per program: the compiled kernel stays small
FUNCS = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
         "rsqrt": lambda v: 1 / np.sqrt(v), "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
         "sigmoid": lambda v: 1 / (1 + np.exp(-v))}


@xd.jit
def half_math_kernel(x, y, R: xt.constexpr):
    """Row block p of x through every function: function i writes rows i*R + 8p.. of y."""
    p = xt.program_id(0) * 8
    v = xt.load_tile(xt.init_tile(x, [p, 0], [8, 32]))
    xt.store_tile(xt.exp(v), xt.init_tile(y, [p, 0], [8, 32]))
    xt.store_tile(xt.exp2(v), xt.init_tile(y, [R + p, 0], [8, 32]))
    xt.store_tile(xt.log(v), xt.init_tile(y, [2 * R + p, 0], [8, 32]))
    xt.store_tile(xt.log2(v), xt.init_tile(y, [3 * R + p, 0], [8, 32]))
    xt.store_tile(xt.sqrt(v), xt.init_tile(y, [4 * R + p, 0], [8, 32]))
    xt.store_tile(xt.rsqrt(v), xt.init_tile(y, [5 * R + p, 0], [8, 32]))
    xt.store_tile(xt.sin(v), xt.init_tile(y, [6 * R + p, 0], [8, 32]))
    xt.store_tile(xt.cos(v), xt.init_tile(y, [7 * R + p, 0], [8, 32]))
    xt.store_tile(xt.tanh(v), xt.init_tile(y, [8 * R + p, 0], [8, 32]))
    xt.store_tile(xt.sigmoid(v), xt.init_tile(y, [9 * R + p, 0], [8, 32]))


ORDER = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid"]


def _all_f16() -> np.ndarray:
    return np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).reshape(-1, COLS)


def _bf16_sweep() -> np.ndarray:
    """Every 8th bf16 bit pattern: all exponents, 16 mantissas each, both signs."""
    bits = (np.arange(0, 65536, 8, dtype=np.uint32)).astype(np.uint16)
    return bits.view(ml_dtypes.bfloat16).reshape(-1, COLS)


def _neighbours_ok(got: np.ndarray, exact: np.ndarray, dtype) -> np.ndarray:
    """True where ``got`` is the correctly rounded ``exact`` or one of its two neighbours
    (NaN where exact is NaN, the same infinity where it is infinite)."""
    rounded = exact.astype(dtype)
    g = got.astype(np.float64)
    nan = np.isnan(exact)
    lo, hi = _neighbour(rounded, -np.inf, dtype), _neighbour(rounded, np.inf, dtype)
    ok = (g == rounded.astype(np.float64)) | (g == lo) | (g == hi)
    return np.where(nan, np.isnan(g), ok)


def _neighbour(values: np.ndarray, direction: float, dtype) -> np.ndarray:
    """The next representable ``dtype`` number from each value towards ``direction``."""
    b = values.astype(dtype).view(np.uint16).astype(np.int32)
    up = (direction > 0)
    positive = (b & 0x8000) == 0
    # moving away from zero increments the magnitude bits, towards zero decrements them
    away = positive == up
    nb = np.where(away, b + 1, b - 1)
    nb = np.where((b & 0x7FFF) == 0, np.where(up, 0x0001, 0x8001), nb)   # from +-0
    return nb.astype(np.uint16).view(dtype).astype(np.float64)


@pytest.mark.parametrize("flavour", ["cpu-pvc", "cpu-arc", "interpret"])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_math_is_rounded_once_from_f32(dtype, flavour):
    nptype = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
    x = _all_f16() if dtype == "f16" else _bf16_sweep()
    rows = x.shape[0]
    y = np.zeros((len(ORDER) * rows, COLS), x.dtype)
    half_math_kernel.on(flavour)[(rows // ROWS,)](x, y, R=rows)
    problems = []
    for i, fn in enumerate(ORDER):
        got = y[i * rows:(i + 1) * rows]
        with np.errstate(all="ignore"):
            exact = FUNCS[fn](x.astype(np.float64))
            bad = np.argwhere(~_neighbours_ok(got, exact, nptype))   # casts overflow to inf on purpose
        if bad.size:
            at = tuple(bad[0])
            problems.append(f"{fn}: {len(bad)} of {got.size} wrong, e.g. {fn}({x[at]!r}) = {got[at]!r}, "
                            f"exact {exact[at]!r}")
    assert not problems, "\n".join(problems)
