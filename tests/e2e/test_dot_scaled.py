"""xt.dot_scaled (OCP MX block scaling) and the MX GEMM of
examples/tutorial_10_block_scaled_matmul.py, against a float64 reference (ml_dtypes
decodes fp8 and the e8m0 scales; e2m1 from its code table), in every flavour.

Tolerance: fp8/fp4 -> f16 is exact, every product of two such values is exact in f32
and the scale (a power of two, applied with ldexp) is exact, so the only rounding is the
f32 accumulation: |c - ref| <= K * 2^-24 * (|a_s| @ |b_s|) (a_s, b_s the scaled operands),
plus 2^-24 * (|acc| + |c|) for adding the accumulator."""
from __future__ import annotations

import importlib.util
import pathlib

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "tutorial_10_block_scaled_matmul.py"


def _tutorial():
    spec = importlib.util.spec_from_file_location("tutorial_10_block_scaled_matmul", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


T = _tutorial()


def _bound(problem, fmt, K, acc=None, ref=None):
    a, sa, b, sb = problem
    absolute = (np.abs(a) if fmt != "e2m1" else a & 0x77, np.abs(b) if fmt != "e2m1" else b & 0x77)
    mag = np.abs(T.reference(absolute[0], sa, absolute[1], sb, fmt)) if fmt == "e2m1" else \
        T.reference(np.abs(a.astype(np.float32)).astype(a.dtype), sa, np.abs(b.astype(np.float32)).astype(b.dtype),
                    sb, fmt)
    return K * 2.0 ** -24 * mag + (0 if acc is None else 2.0 ** -24 * (np.abs(acc) + np.abs(ref))) + 1e-30


@pytest.mark.parametrize("target,fmt", [("cpu-pvc", "e4m3"), ("cpu-pvc", "e2m1"), ("cpu-arc", "e5m2"),
                                        ("interpret", "e4m3"), ("interpret", "e5m2"), ("interpret", "e2m1")])
def test_mx_gemm_tutorial(target, fmt):
    M, N, K = 32, 16, 128   # two K steps of the tutorial's BK = 64: two scale blocks a call
    problem = T.random_problem(M, N, K, fmt, seed=1)
    c, ref = T.matmul(*problem, format=fmt, target=target), T.reference(*problem, format=fmt)
    assert (np.abs(c - ref) <= _bound(problem, fmt, K)).all()


@xd.jit
def one_block(a, sa, b, sb, c, M: xt.constexpr, N: xt.constexpr, KB: xt.constexpr, FMT: xt.constexpr,
              ROW: xt.constexpr):
    s2 = (xt.load_tile(xt.init_tile(sb, [0, 0], [1, N])) if ROW
          else xt.load_tile(xt.init_tile(sb, [0, 0], [N, 1])))
    acc = xt.load_tile(xt.init_tile(c, [0, 0], [M, N]))
    r = xt.dot_scaled(xt.load_tile(xt.init_tile(a, [0, 0], [M, KB])), xt.load_tile(xt.init_tile(sa, [0, 0], [M, 1])),
                      xt.load_tile(xt.init_tile(b, [0, 0], [KB, N])), s2, acc, format=FMT)
    xt.store_tile(r, xt.init_tile(c, [0, 0], [M, N]))


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "e2m1"])
@pytest.mark.parametrize("seed", range(3))
def test_one_block_extreme_scales_interpreter(fmt, seed):
    """Scales 0..254 (2^-127 .. 2^127: a scaled operand far outside f16, even f32, range
    while the product is not), 255 = NaN, an accumulator, b_scale as [N, 1] or [1, N]."""
    rng = np.random.default_rng(seed)
    M, N = (8, 16, 32)[seed], (16, 32, 16)[seed]
    a, _, b, _ = T.random_problem(M, N, 32, fmt, seed)
    sa = rng.integers(0, 255, (M, 1)).astype(np.uint8)
    sb = (254 - sa[:N] + rng.integers(-3, 4, sa[:N].shape)).clip(0, 254).astype(np.uint8) if N <= M else \
        rng.integers(100, 155, (N, 1)).astype(np.uint8)
    sa[1, 0], sb[2, 0] = 255, 255
    acc = rng.standard_normal((M, N)).astype(np.float32)
    c = acc.copy()
    row = seed == 1
    one_block.on("interpret")[(1,)](a, sa, b, sb.T.copy() if row else sb, c, M=M, N=N, KB=16 if fmt == "e2m1" else 32,
                                    FMT=fmt, ROW=row)
    with np.errstate(all="ignore"):
        ref = acc + T.reference(a, sa, b, sb, fmt)
        bound = _bound((a, sa, b, sb), fmt, 32, acc, ref)
    nan = np.zeros((M, N), bool)
    nan[1, :], nan[:, 2] = True, True
    assert np.isnan(c[nan]).all()
    big = ~nan & (np.abs(ref) > 2.0 ** 128 * (1 + bound / np.abs(ref)))   # past f32: inf of the sign
    assert (c[big] == np.sign(ref[big]) * np.inf).all()
    finite = ~nan & (np.abs(ref) < 2.0 ** 127)
    assert (np.abs(c - ref)[finite] <= bound[finite]).all()


def test_dot_scaled_refuses_wrong_shapes_and_formats():
    a = np.zeros((16, 64), ml_dtypes.float8_e4m3fn)
    s = np.zeros((16, 2), np.uint8)
    c = np.zeros((16, 16), np.float32)
    with pytest.raises(CompilationError, match=r"a_scale must be a \[16, 2\] uint8 tile"):   # K = 64: two blocks
        one_block.on("interpret")[(1,)](a, s, a.T.copy(), s, c, M=16, N=16, KB=64, FMT="e4m3", ROW=False)
    with pytest.raises(CompilationError, match=r"K a multiple of 32"):
        one_block.on("interpret")[(1,)](a, s, a.T.copy(), s, c, M=16, N=16, KB=16, FMT="e4m3", ROW=False)
    with pytest.raises(CompilationError, match=r"format must be \"e4m3\", \"e5m2\", \"e2m1\", \"bf16\" or \"fp16\""):
        one_block.on("interpret")[(1,)](a, s, a.T.copy(), s, c, M=16, N=16, KB=32, FMT="e3m2", ROW=False)
    with pytest.raises(CompilationError, match=r"a must hold uint8 bytes"):
        one_block.on("interpret")[(1,)](a, s, a.T.copy(), s, c, M=16, N=16, KB=16, FMT="e2m1", ROW=False)
    with pytest.raises(CompilationError, match=r"a_scale must be a \[16, 1\] uint8 tile"):
        one_block.on("interpret")[(1,)](a, s.astype(np.int32), a.T.copy(), s, c, M=16, N=16, KB=32, FMT="e4m3",
                                        ROW=False)
