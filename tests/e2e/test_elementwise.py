"""Element-wise ops, broadcasts, reductions and non-f32 stores through the whole pipeline
(blocking -> XeGPU -> SIMT -> LLVM -> SPIR-V) on the OpenCL CPU device, in the PVC
(16-lane) and ARC (8-lane) flavours, against numpy."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from kernels.fused import gemm_bias_relu, gemm_epilogue, gemm_gelu, row_softmax

FLAVOURS = ["pvc", "arc"]
BF16 = ml_dtypes.bfloat16


@xd.jit
def row_stats(x, out, BM: xt.constexpr, BN: xt.constexpr):
    """Per row: max -> out[:, 0], sum -> out[:, 1], min + out[:, 2] -> out[:, 3]."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    xt.store_tile(xt.max(v, axis=1), xt.init_tile(out, [pid * BM, 0], [BM, 1]))
    xt.store_tile(xt.sum(v, axis=1), xt.init_tile(out, [pid * BM, 1], [BM, 1]))
    col = xt.load_tile(xt.init_tile(out, [pid * BM, 2], [BM, 1]))
    xt.store_tile(xt.min(v, axis=1) + col, xt.init_tile(out, [pid * BM, 3], [BM, 1]))


@xd.jit
def col_stats(x, out, BM: xt.constexpr, BN: xt.constexpr):
    """Per column of each BM-row band: sum -> out[2*pid], max -> out[2*pid + 1]."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    xt.store_tile(xt.sum(v, axis=0), xt.init_tile(out, [2 * pid, 0], [1, BN]))
    xt.store_tile(xt.max(v, axis=0), xt.init_tile(out, [2 * pid + 1, 0], [1, BN]))


@xd.jit
def int_sums(x, out, BM: xt.constexpr, BN: xt.constexpr):
    """i32 row sums broadcast back and column maxima of an i32 tile."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    xt.store_tile(v * 2 - xt.sum(v, axis=1) + xt.max(v, axis=0), xt.init_tile(out, [pid * BM, 0], [BM, BN]))


@xd.jit
def broadcast_add(x, row, col, y, BM: xt.constexpr, BN: xt.constexpr):
    """y = x + row ([1, N]) * col ([M, 1]) where x > 0, else sigmoid(x); f16 output."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    v = xt.load_tile(xt.init_tile(x, [pid_m * BM, pid_n * BN], [BM, BN]))
    r = xt.load_tile(xt.init_tile(row, [0, pid_n * BN], [1, BN]))
    c = xt.load_tile(xt.init_tile(col, [pid_m * BM, 0], [BM, 1]))
    out = xt.where(v > 0.0, v + r * c, xt.sigmoid(v))
    xt.store_tile(xt.astype(out, xt.float16), xt.init_tile(y, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def cast_chain(x, o_bf16, o_f16, o_i8, o_f32, BM: xt.constexpr, BN: xt.constexpr):
    """f32 -> bf16 / f16 / i32 -> i8, and back to f32 through extf, extsi, sitofp."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    b = xt.astype(v, xt.bfloat16)
    h = xt.astype(v, xt.float16)
    q = xt.astype(xt.astype(v * 40.0, xt.int32), xt.int8)
    back = xt.astype(b, xt.float32) - xt.astype(h, xt.float32) + xt.astype(xt.astype(q, xt.int32) * 3, xt.float32)
    xt.store_tile(b, xt.init_tile(o_bf16, [pid * BM, 0], [BM, BN]))
    xt.store_tile(h, xt.init_tile(o_f16, [pid * BM, 0], [BM, BN]))
    xt.store_tile(q, xt.init_tile(o_i8, [pid * BM, 0], [BM, BN]))
    xt.store_tile(back, xt.init_tile(o_f32, [pid * BM, 0], [BM, BN]))


@xd.jit
def math_ops(x, y, OP: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr):
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    if OP == 0:
        r = xt.exp(v) + xt.log(xt.abs(v) + 1.0) - xt.sqrt(xt.abs(v))
    elif OP == 1:
        r = xt.sin(v) * xt.cos(v) + xt.rsqrt(v * v + 1.0) + xt.exp2(v) - xt.log2(v * v + 2.0)
    else:
        r = xt.minimum(xt.maximum(v, -0.5), 0.5) + xt.fma(v, v, 1.0) - xt.sigmoid(v) / 2.0
    xt.store_tile(r, xt.init_tile(y, [pid * BM, 0], [BM, BN]))


def _gemm_inputs(M, N, K, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("shape", [(64, 64, 64), (100, 72, 48)], ids=lambda s: "x".join(map(str, s)))
def test_gemm_bias_relu_bf16_output(shape, flavour):
    M, N, K = shape
    a, b = _gemm_inputs(M, N, K, 3)
    bias = np.random.default_rng(4).standard_normal((1, N)).astype(np.float32)
    c = np.full((M, N), 7, BF16)
    BM, BN = 32, 32
    gemm_bias_relu.on(f"cpu-{flavour}")[(-(-M // BM), -(-N // BN))](a, b, bias, c, K, BM=BM, BN=BN, BK=16)
    ref = np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias, 0)
    # the f32 sums may differ in the last bit, which can move the bf16 rounding by one ulp
    np.testing.assert_allclose(c.astype(np.float32), ref.astype(BF16).astype(np.float32), rtol=8e-3, atol=1e-5)
    assert (c.astype(np.float32) >= 0).all()


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("tanh", [False, True], ids=["erf", "tanh"])
def test_gemm_gelu(tanh, flavour):
    M, N, K = 64, 64, 32
    a, b = _gemm_inputs(M, N, K, 5)
    c = np.zeros((M, N), np.float32)
    gemm_gelu.on(f"cpu-{flavour}")[(M // 32, N // 32)](a, b, c, K, TANH=tanh, BM=32, BN=32, BK=16)
    x = a.astype(np.float64) @ b.astype(np.float64)
    if tanh:
        ref = 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
    else:
        ref = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("BN", [16, 32])
def test_row_softmax(BN, flavour):
    M = 72  # not a multiple of BM: the last tile's rows hang over the edge
    x = (np.random.default_rng(BN).standard_normal((M, BN)) * 4).astype(np.float32)
    y = np.full_like(x, np.nan)
    row_softmax.on(f"cpu-{flavour}")[(-(-M // 16),)](x, y, BM=16, BN=BN)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_row_reductions_store_columns(flavour):
    M, BN = 40, 32
    x = np.random.default_rng(1).standard_normal((M, BN)).astype(np.float32)
    out = np.zeros((M, 16), np.float32)
    out[:, 2] = np.arange(M)
    row_stats.on(f"cpu-{flavour}")[(-(-M // 16),)](x, out, BM=16, BN=BN)
    np.testing.assert_array_equal(out[:, 0], x.max(1))
    np.testing.assert_allclose(out[:, 1], x.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[:, 3], x.min(1) + np.arange(M, dtype=np.float32))
    np.testing.assert_array_equal(out[:, 4:], 0)  # nothing written beside the columns


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("BN", [16, 48])
def test_column_reductions_store_rows(BN, flavour):
    M = 64
    x = np.random.default_rng(2).standard_normal((M, BN)).astype(np.float32)
    out = np.zeros((2 * M // 16, BN), np.float32)
    col_stats.on(f"cpu-{flavour}")[(M // 16,)](x, out, BM=16, BN=BN)
    bands = x.reshape(M // 16, 16, BN)
    np.testing.assert_allclose(out[0::2], bands.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[1::2], bands.max(1))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_integer_reductions(flavour):
    M, BN = 32, 32
    x = np.random.default_rng(6).integers(-1000, 1000, (M, BN)).astype(np.int32)
    out = np.zeros_like(x)
    int_sums.on(f"cpu-{flavour}")[(M // 16,)](x, out, BM=16, BN=BN)
    bands = x.reshape(M // 16, 16, BN)
    ref = x * 2 - x.sum(1, keepdims=True) + np.repeat(bands.max(1), 16, axis=0)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_broadcast_row_and_column_with_where(flavour):
    M, N = 48, 64
    rng = np.random.default_rng(7)
    x = rng.standard_normal((M, N)).astype(np.float32)
    row = rng.standard_normal((1, N)).astype(np.float32)
    col = np.zeros((M, 16), np.float32)
    col[:, 0] = rng.standard_normal(M)
    y = np.zeros((M, N), np.float16)
    broadcast_add.on(f"cpu-{flavour}")[(M // 16, N // 32)](x, row, col, y, BM=16, BN=32)
    ref = np.where(x > 0, x + row * col[:, :1], 1 / (1 + np.exp(-x)))
    np.testing.assert_allclose(y.astype(np.float32), ref.astype(np.float16).astype(np.float32), rtol=2e-3, atol=1e-6)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_cast_chain(flavour):
    M, N = 32, 64
    x = np.random.default_rng(8).uniform(-6, 6, (M, N)).astype(np.float32)
    x[0, :4] = [0.0, -0.0, 1.00390625, 1.01171875]  # bf16 ties: round to even
    outs = [np.zeros((M, N), t) for t in (BF16, np.float16, np.int8, np.float32)]
    cast_chain.on(f"cpu-{flavour}")[(M // 16,)](x, *outs, BM=16, BN=N)
    b, h = x.astype(BF16), x.astype(np.float16)
    q = (x * np.float32(40)).astype(np.int32).astype(np.int8)
    np.testing.assert_array_equal(outs[0].view(np.uint16), b.view(np.uint16))
    np.testing.assert_array_equal(outs[1], h)
    np.testing.assert_array_equal(outs[2], q)
    ref = b.astype(np.float32) - h.astype(np.float32) + (q.astype(np.int32) * 3).astype(np.float32)
    np.testing.assert_array_equal(outs[3], ref)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("op", [0, 1, 2])
def test_math_functions(op, flavour):
    M, N = 16, 32
    x = np.random.default_rng(op).uniform(-3, 3, (M, N)).astype(np.float32)
    y = np.zeros_like(x)
    math_ops.on(f"cpu-{flavour}")[(1,)](x, y, OP=op, BM=M, BN=N)
    v = x.astype(np.float64)
    if op == 0:
        ref = np.exp(v) + np.log(np.abs(v) + 1) - np.sqrt(np.abs(v))
    elif op == 1:
        ref = np.sin(v) * np.cos(v) + 1 / np.sqrt(v * v + 1) + np.exp2(v) - np.log2(v * v + 2)
    else:
        ref = np.clip(v, -0.5, 0.5) + (v * v + 1) - 1 / (1 + np.exp(-v)) / 2
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


@xd.jit
def scaled_a_operand(a, b, c, BM: xt.constexpr):
    va = xt.load_tile(xt.init_tile(a, [0, 0], [BM, 16])) * 2.0
    vb = xt.load_tile(xt.init_tile(b, [0, 0], [16, 16]))
    xt.store_tile(xt.tile_mma(va, vb), xt.init_tile(c, [0, 0], [BM, 16]))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_elementwise_on_a_dpas_operand(flavour):
    """Lowered since operand chains landed (more in test_lowering_gaps.py)."""
    rng = np.random.default_rng(41)
    a = rng.integers(-4, 5, (8, 32)).astype(np.float16)  # 64-byte rows for PVC's 2D blocks
    b = rng.integers(-4, 5, (16, 32)).astype(np.float16)
    c = np.zeros((8, 16), np.float32)
    scaled_a_operand.on(f"cpu-{flavour}")[(1,)](a, b, c, BM=8)
    np.testing.assert_array_equal(c, (2 * a[:, :16].astype(np.float32)) @ b[:, :16].astype(np.float32))


@xd.jit
def int_ops(x, y, BM: xt.constexpr, BN: xt.constexpr):
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    r = xt.abs(v) // 3 + xt.maximum(v, 7) * (v % 5) - xt.minimum(v, -2)
    xt.store_tile(xt.where(v >= 0, r, r ^ 255), xt.init_tile(y, [pid * BM, 0], [BM, BN]))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_integer_elementwise(flavour):
    M, N = 32, 32
    x = np.random.default_rng(9).integers(-100, 100, (M, N)).astype(np.int32)
    y = np.zeros_like(x)
    int_ops.on(f"cpu-{flavour}")[(M // 16,)](x, y, BM=16, BN=N)
    r = np.abs(x) // 3 + np.maximum(x, 7) * (x % 5) - np.minimum(x, -2)  # Python's % (floor)
    np.testing.assert_array_equal(y, np.where(x >= 0, r, r ^ 255))


@xd.jit
def div_mod(x, d, q, r, BN: xt.constexpr):
    """Python's ``//`` and ``%`` on tiles with a runtime (possibly negative) divisor."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, BN]))
    xt.store_tile(v // d, xt.init_tile(q, [0, 0], [8, BN]))
    xt.store_tile(v % d, xt.init_tile(r, [0, 0], [8, BN]))


@pytest.mark.parametrize("flavour", FLAVOURS + ["interpret"])
@pytest.mark.parametrize("divisor", [7, -7])
def test_floor_division_and_modulo_follow_python(flavour, divisor):
    """``a == d * (a // d) + a % d`` with the remainder taking the divisor's sign, as in
    Python and numpy, for both signs of the dividend and the divisor."""
    x = np.arange(-64, 64, dtype=np.int32).reshape(8, 16)
    q, r = np.zeros_like(x), np.zeros_like(x)
    target = flavour if flavour == "interpret" else f"cpu-{flavour}"
    div_mod.on(target)[(1,)](x, divisor, q, r, BN=16)
    np.testing.assert_array_equal(q, x // divisor)
    np.testing.assert_array_equal(r, x % divisor)
    np.testing.assert_array_equal(divisor * q + r, x)


def test_gemm_epilogue_split_loop_row_and_column_broadcasts_exact_on_arc():
    """The ARC 16x64 piece (K loop split in two, each copy's epilogue re-reading the bias
    row with subgroup block reads) with a scale column and a bias row, exact against
    numpy: small integers make every product, sum and the bf16 result exact.  M and N
    leave partial tiles, so rows outside the array take the per-lane path."""
    M, N, K = 40, 104, 32
    rng = np.random.default_rng(19)
    a = rng.integers(-1, 2, (M, K)).astype(BF16)
    b = rng.integers(-1, 2, (K, N)).astype(BF16)
    bias = rng.integers(-8, 9, (1, N)).astype(np.float32)
    scale = rng.integers(-2, 3, (M, 1)).astype(np.float32)
    c = np.full((M, N), 7, BF16)
    BM, BN = 16, 64
    gemm_epilogue.on("cpu-arc")[(-(-M // BM), -(-N // BN))](a, b, bias, scale, c, K, BM=BM, BN=BN, BK=16, EPI=3)
    ref = np.maximum((a.astype(np.float32) @ b.astype(np.float32)) * scale + bias, 0)
    np.testing.assert_array_equal(c.astype(np.float32), ref)
