"""fp8 (xt.float8_e4m3fn, xt.float8_e5m2) end to end: arrays of ml_dtypes' float8 types,
xt.astype both ways (codegen: integer code on the bits, codegen/fp8.py; interpreter:
ml_dtypes) and tile_mma on fp8 operands (converted to f16 for DPAS), on the CPU device
in both flavours and in the interpreter, against ml_dtypes and numpy; the GPU targets
through ocloc; the located errors."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError
from xetile_dsl.kernels.matmul import matmul_kernel
from f32_accumulate_ref import exact_products_matmul, excess

TARGETS = ["cpu-pvc", "cpu-arc", "interpret"]
FP8 = {"e4m3fn": (ml_dtypes.float8_e4m3fn, xt.float8_e4m3fn), "e5m2": (ml_dtypes.float8_e5m2, xt.float8_e5m2)}
BF16 = np.dtype(ml_dtypes.bfloat16)


@xd.jit
def widen(a, c32, c16, cbf, BM: xt.constexpr, BN: xt.constexpr):
    """fp8 tile -> f32, f16 and bf16."""
    pm, pn = xt.program_id(0), xt.program_id(1)
    v = xt.load_tile(xt.init_tile(a, [pm * BM, pn * BN], [BM, BN]))
    xt.store_tile(xt.astype(v, xt.float32), xt.init_tile(c32, [pm * BM, pn * BN], [BM, BN]))
    xt.store_tile(xt.astype(v, xt.float16), xt.init_tile(c16, [pm * BM, pn * BN], [BM, BN]))
    xt.store_tile(v.to(xt.bfloat16), xt.init_tile(cbf, [pm * BM, pn * BN], [BM, BN]))


@xd.jit
def narrow(x, c, csat, BM: xt.constexpr, BN: xt.constexpr, DT: xt.constexpr):
    """f32/f16/bf16 tile -> fp8 ``DT``, plain and saturating."""
    pm, pn = xt.program_id(0), xt.program_id(1)
    v = xt.load_tile(xt.init_tile(x, [pm * BM, pn * BN], [BM, BN]))
    xt.store_tile(xt.astype(v, DT), xt.init_tile(c, [pm * BM, pn * BN], [BM, BN]))
    xt.store_tile(xt.astype(v, DT, saturate=True), xt.init_tile(csat, [pm * BM, pn * BN], [BM, BN]))


def _same_values(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Per element: equal bits, or both NaN (the NaN payload is not specified)."""
    g, r = got.astype(np.float32), ref.astype(np.float32)
    return (g.view(np.uint32) == r.view(np.uint32)) | (np.isnan(g) & np.isnan(r))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fmt", FP8)
def test_every_fp8_code_widens_exactly(fmt, target):
    """All 256 codes (zeros, subnormals, normals, the largest, inf/NaN) to f32, f16, bf16,
    bit for bit as ml_dtypes converts them (every fp8 value is exact in all three)."""
    np_t, _ = FP8[fmt]
    a = np.arange(256, dtype=np.uint8).view(np_t).reshape(8, 32)
    outs = [np.zeros(a.shape, d) for d in (np.float32, np.float16, BF16)]
    widen.on(target)[(1, 1)](a, *outs, BM=8, BN=32)
    for out in outs:
        assert _same_values(out, a.astype(out.dtype)).all(), (out.dtype, a[~_same_values(out, a.astype(out.dtype))])


def _f32_sweep(np_t) -> np.ndarray:
    """f32 inputs around every fp8 value: the values, the ties between neighbours (exact in
    f32), one f32 ulp either side of each, ties past the largest finite value, zeros,
    infinities, NaN, values below half the smallest subnormal, and random bit patterns."""
    codes = np.arange(128, dtype=np.uint8).view(np_t).astype(np.float64)
    finite = np.sort(codes[np.isfinite(codes)])
    ulp = np.float64(np.finfo(np_t).eps) * float(np.finfo(np_t).max)
    finite = np.append(finite, float(np.finfo(np_t).max) + ulp)          # the next value after max
    ties = (finite[:-1] + finite[1:]) / 2
    core = np.concatenate([finite, ties]).astype(np.float32)
    near = np.concatenate([core, np.nextafter(core, np.float32(np.inf)), np.nextafter(core, np.float32(0))])
    special = np.array([0, np.inf, np.nan, 1e-30, float(finite[1]) / 4, 1e30, 3.4e38], np.float32)
    rng = np.random.default_rng(7)
    random = rng.integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32).view(np.float32)
    values = np.concatenate([near, special, random])
    values = np.concatenate([values, -values])
    pad = (-values.size) % (32 * 32)
    return np.concatenate([values, np.zeros(pad, np.float32)]).reshape(-1, 32)


def _inputs(src: str, np_t) -> np.ndarray:
    if src == "f32":
        return _f32_sweep(np_t)
    # every f16 / bf16 bit pattern (subnormals, ties, overflow, inf, NaN of both signs)
    return np.arange(1 << 16, dtype=np.uint16).view(np.float16 if src == "f16" else BF16).reshape(-1, 256)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("src", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("fmt", FP8)
def test_narrowing_rounds_like_ml_dtypes(fmt, src, target):
    """Round to nearest even, bit for bit as ml_dtypes (NaN: any NaN code); past the
    largest finite value NaN for e4m3fn and inf for e5m2; saturate=True clamps to the
    largest finite value instead (infinities too), NaN stays NaN."""
    np_t, xt_t = FP8[fmt]
    x = _inputs(src, np_t)
    c, csat = np.zeros(x.shape, np_t), np.zeros(x.shape, np_t)
    bn = 32 if src == "f32" else 64
    narrow.on(target)[(x.shape[0] // 32, x.shape[1] // bn)](x, c, csat, BM=32, BN=bn, DT=xt_t)
    big = float(np.finfo(np_t).max)
    ref, ref_sat = x.astype(np_t), np.clip(x.astype(np.float32), -big, big).astype(np_t)
    for got, want in ((c, ref), (csat, ref_sat)):
        ok = _same_values(got, want)
        assert ok.all(), (x[~ok][:8], got.view(np.uint8)[~ok][:8], want.view(np.uint8)[~ok][:8])
    assert np.isnan(c.astype(np.float32)).any() and not np.isnan(csat.astype(np.float32)[~np.isnan(x.astype(
        np.float32))]).any()  # overflow seen, and saturation removes it


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fa,fb", [("e4m3fn", "e4m3fn"), ("e5m2", "e5m2"), ("e4m3fn", "e5m2"), ("e5m2", "f16")])
def test_fp8_tile_mma_accumulates_in_f32(fa, fb, target):
    """fp8 operands are converted to f16 in registers (exact) and multiplied by DPAS in f32:
    fp8 values have at most 4 significant bits, so every product is exact in f32 and the
    f32 accumulation bound of f32_accumulate_ref holds; 100x72x160 also checks the edges."""
    M, N, K = 100, 72, 160
    rng = np.random.default_rng(len(fa + fb))
    dt = {"f16": np.float16, **{k: v[0] for k, v in FP8.items()}}
    a = (rng.standard_normal((M, K)) * 4).astype(dt[fa])
    b = (rng.standard_normal((K, N)) * 4).astype(dt[fb])
    c = np.full((M, N), np.nan, np.float32)
    BM, BN, BK = (32, 32, 32) if target != "cpu-arc" else (16, 16, 32)
    matmul_kernel.on(target)[(-(-M // BM), -(-N // BN))](a, b, c, K, BM=BM, BN=BN, BK=BK)
    ref, bound = exact_products_matmul(a.astype(np.float32), b.astype(np.float32))
    assert excess(c, ref, bound) <= 1


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret-subgroups"])
def test_fp8_workgroup_gemm(target):
    """The RFC's workgroup GEMM (gemm_wg_kernel: 4x2 subgroups, cooperative prefetch) on
    e4m3fn x e5m2: the conversion is distributed with the tiles; same f32 bound."""
    from xetile_dsl.kernels.gemm_wg import EMULATED_TILE, gemm_wg_kernel

    M, N, K = 128, 128, 96
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.float8_e5m2)
    c = np.full((M, N), np.nan, np.float32)
    tile = EMULATED_TILE.constants()
    gemm_wg_kernel.on(target)[(M // tile["BM"], N // tile["BN"])](a, b, c, K, BK=32, ACC=xt.float32, **tile)
    ref, bound = exact_products_matmul(a.astype(np.float32), b.astype(np.float32))
    assert excess(c, ref, bound) <= 1


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_fp8_kernels_compile_for_the_gpu(target):
    """ocloc accepts the conversions and the fp8 GEMM (f16 DPAS after the conversion)."""
    from conftest_tools import require_ocloc

    require_ocloc()
    conv = xd.compile(narrow, {"x": "f32[:,:]", "c": "f8e4m3fn[:,:]", "csat": "f8e4m3fn[:,:]"},
                      {"BM": 8, "BN": 16, "DT": xt.float8_e4m3fn}, target=target)
    assert "mov" in conv.asm["isa"]
    tile = 32 if target == "pvc" else 16   # ARC's smaller register file
    gemm = xd.compile(matmul_kernel, {"a": "f8e5m2[:,:]", "b": "f8e4m3fn[:,:]", "c": "f32[:,:]", "K": "i32"},
                      {"BM": tile, "BN": tile, "BK": 32}, target=target)
    assert "dpas" in gemm.asm["isa"]


@xd.jit
def fp8_add(a, c, BM: xt.constexpr):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [BM, BM]))
    xt.store_tile(v + v, xt.init_tile(c, [0, 0], [BM, BM]))


@xd.jit
def fp8_sum(a, c, BM: xt.constexpr):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [BM, BM]))
    xt.store_tile(xt.sum(v, axis=1), xt.init_tile(c, [0, 0], [BM, 1]))


@xd.jit
def fp8_neg(a, c, BM: xt.constexpr):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [BM, BM]))
    xt.store_tile(-v, xt.init_tile(c, [0, 0], [BM, BM]))


@xd.jit
def fp8_atomic(a, c, BM: xt.constexpr):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [BM, BM]))
    xt.atomic_rmw("add", v, xt.init_tile(c, [0, 0], [BM, BM]))


@xd.jit
def saturate_f16(a, c, BM: xt.constexpr):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [BM, BM]))
    xt.store_tile(xt.astype(v, xt.float16, saturate=True), xt.init_tile(c, [0, 0], [BM, BM]))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kernel,cols", [(fp8_add, 16), (fp8_sum, 1), (fp8_neg, 16), (fp8_atomic, 16)])
def test_fp8_arithmetic_is_a_located_error(kernel, cols, target):
    """Arithmetic, reductions, negation and atomics on fp8 are refused at the user's line."""
    a = np.zeros((16, 16), ml_dtypes.float8_e4m3fn)
    with pytest.raises(CompilationError, match=r"test_fp8.py:\d+.*f8e4m3fn values cannot be computed with.*xt.astype"):
        kernel.on(target)[(1,)](a, np.zeros((16, cols), a.dtype), BM=16)


@pytest.mark.parametrize("target", TARGETS)
def test_saturate_needs_an_fp8_result(target):
    a = np.zeros((16, 16), np.float32)
    with pytest.raises(CompilationError, match=r"test_fp8.py:\d+.*saturate=True applies to fp8 results"):
        saturate_f16.on(target)[(1,)](a, np.zeros((16, 16), np.float16), BM=16)


def test_an_fp8_scalar_parameter_is_refused():
    from xetile_dsl.errors import UsageError

    with pytest.raises(UsageError, match=r"signature of 's': an fp8 \(f8e5m2\) scalar parameter is not supported"):
        xd.compile(fp8_add, {"a": "f8e5m2[:,:]", "c": "f8e5m2[:,:]", "s": "f8e5m2"}, {"BM": 16}, target="pvc")


@xd.jit
def scalar_roundtrip(c, s):
    q = xt.astype(xt.astype(s, xt.float8_e4m3fn), xt.float32)   # a runtime scalar through fp8
    xt.store_tile(xt.full([16, 16], 1.0, xt.float32) * q, xt.init_tile(c, [0, 0], [16, 16]))


@pytest.mark.parametrize("target", TARGETS)
def test_scalar_conversions(target):
    """Runtime scalars convert like tiles: a subnormal, a tie, the largest-value tie and overflow."""
    for s in (0.3, 0.0029296875, 464.0, 480.0, -1e-4):
        c = np.zeros((16, 16), np.float32)
        scalar_roundtrip.on(target)[(1,)](c, s)
        want = np.float32(s).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
        assert _same_values(c, np.full_like(c, want)).all(), (s, c[0, 0], want)


@xd.jit
def fp8_transposed_a(at, b, c, BM: xt.constexpr):
    va = xt.load_tile(xt.init_tile(at, [0, 0], [BM, BM], order=(0, 1)))
    vb = xt.load_tile(xt.init_tile(b, [0, 0], [BM, BM]))
    xt.store_tile(xt.tile_mma(va, vb), xt.init_tile(c, [0, 0], [BM, BM]))


@pytest.mark.parametrize("target", TARGETS)
def test_a_column_major_fp8_a_operand_is_a_located_error(target):
    """Its per-lane layout is not lowered: every flavour refuses it at the tile_mma (the
    interpreter too), instead of an internal error in the CPU device's compile."""
    a = np.zeros((32, 32), ml_dtypes.float8_e4m3fn)
    with pytest.raises(CompilationError, match=r"test_fp8.py:\d+:\d+: error: tile_mma: an A operand of f8e4m3fn "
                       r"loaded through a column-major \(order=\(0, 1\)\) tile is not supported yet"):
        fp8_transposed_a.on(target)[(1,)](a, a.copy(), np.zeros((32, 32), np.float32), BM=32)
