"""Triton's tutorials 01-06 and 09 ported the Triton way, using only what README.md and the
language docstrings promise (kernels: tests/kernels/triton_ports.py), each against numpy
in both CPU device flavours and the interpreter, and compiled for pvc and arc."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from kernels import triton_ports as tp
from xetile_dsl.errors import CompilationError
from xetile_dsl.interpreter import philox

FLAVOURS = ["interpret", "cpu-pvc", "cpu-arc"]
RNG = np.random.default_rng(0)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_01_vector_add_masked_tail(flavour):
    """n = 1000 is no multiple of BLOCK = 128; one f32 add per element: exact."""
    n = 1000
    x, y = RNG.random(n, dtype=np.float32), RNG.random(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    tp.add.on(flavour)[(xt.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
    assert np.array_equal(out, x + y)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_02_fused_softmax_other_inf(flavour):
    """81 columns (not a power of two) in a 128-wide row loaded with other=-inf, rows
    strided over 8 programs; exp and a sum of 81 terms in f32: a few ulp, rtol 1e-5."""
    x = RNG.standard_normal((37, 81)).astype(np.float32)
    y = np.full_like(x, 7.0)
    tp.softmax.on(flavour)[(8,)](x, y, 37, 81, BN=128)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    assert np.allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_03_matmul_edge_masks_leaky_relu(flavour):
    """70 x 72 x 50 (no tile multiples) with Triton's offs_m[:, None] / offs_k masks, a
    fused leaky ReLU, f16 output: f32 accumulation of 72 products of |x| <= 0.5 is far below
    the f16 rounding of the result (2^-11 relative), so rtol 2^-10, atol 1e-3."""
    M, N, K = 70, 50, 72
    a, b = ((RNG.random(s) - .5).astype(np.float16) for s in ((M, K), (K, N)))
    c = np.zeros((M, N), np.float16)
    tp.mm.on(flavour)[(xt.cdiv(M, 32), xt.cdiv(N, 32))](a, b, c, M, N, K, BM=32, BN=32, BK=16)
    r = a.astype(np.float64) @ b.astype(np.float64)
    assert np.allclose(c.astype(np.float64), np.where(r >= 0, r, 0.01 * r), rtol=2**-10, atol=1e-3)


@pytest.mark.parametrize("target", FLAVOURS)
def test_03_both_masks_on_a_tile_mma_result_is_a_located_error(target):
    """A column mask stores per lane, one-row pieces a DPAS result is not laid out in: the
    error (the frontend's, so the interpreter agrees) points at the store and says to mask
    the rows only (not 'feeds another tile_mma')."""
    a, b, c = np.ones((32, 16), np.float16), np.ones((16, 32), np.float16), np.zeros((32, 32), np.float32)
    with pytest.raises(CompilationError, match=r"store_tile: this mask is no row edge.*tile_mma result.*"
                                               r"offs_m\[:, None\] < M") as err:
        tp.mm_both_masks.on(target)[(1,)](a, b, c, 30, 30, BM=32, BN=32, BK=16)
    assert "triton_ports.py" in str(err.value) and "feeds another" not in str(err.value)
    with pytest.raises(CompilationError, match=r"store_tile: this mask is no row edge"):   # one row too
        tp.mm_both_masks.on(target)[(1,)](a[:1], b, c[:1], 1, 20, BM=1, BN=32, BK=16)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_04_low_memory_dropout(flavour):
    """xt.rand is Philox bit for bit (philox.rand); x / (1 - p) with p = 0.5 is exact."""
    n, p = 1000, 0.5
    x = RNG.random(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    tp.dropout.on(flavour)[(xt.cdiv(n, 256),)](x, out, n, p, 123, BLOCK=256)
    r = philox.rand(123, np.arange(n, dtype=np.int32))
    assert np.array_equal(out, np.where(r > p, x / np.float32(1 - p), 0).astype(np.float32))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_05_layer_norm_forward_stats_to_1d(flavour):
    """100-wide rows, mean and rstd stored to 1-D arrays (xt.reshape(mean, [1])): f32 sums
    of 100 terms of |x| ~ 1, so 1e-5 absolute / relative."""
    R, N = 12, 100
    x = RNG.standard_normal((R, N)).astype(np.float32)
    w, b = RNG.random(N).astype(np.float32), RNG.random(N).astype(np.float32)
    y, mean, rstd = np.zeros_like(x), np.zeros(R, np.float32), np.zeros(R, np.float32)
    tp.ln_fwd.on(flavour)[(R,)](x, y, w, b, mean, rstd, N, 1e-5, BN=128)
    mu, rs = x.astype(np.float64).mean(1), 1 / np.sqrt(x.astype(np.float64).var(1) + 1e-5)
    assert np.allclose(mean, mu, atol=1e-5) and np.allclose(rstd, rs, rtol=1e-5)
    assert np.allclose(y, (x - mu[:, None]) * rs[:, None] * w + b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_05_layer_norm_backward_dw_db_under_a_cas_lock(flavour):
    """dX row by row, and Triton's lock scheme: lock[g, 0] taken with atomic_cas(sem="acquire"), lock[g, 1]
    the first-writer flag, released with atomic_xchg(sem="release"); each group's partial
    dW/dB is a sum of 3 rows in f32 (order varies): 1e-5; dX subtracts two
    100-term means (cancellation, values ~ 1): rtol 1e-4, atol 1e-5."""
    R, N, G = 12, 100, 4
    x, dy = (RNG.standard_normal((R, N)).astype(np.float32) for _ in range(2))
    mu, rs = x.mean(1).astype(np.float32), (1 / np.sqrt(x.var(1) + 1e-5)).astype(np.float32)
    dw, db, lock = np.full((G, N), 9, np.float32), np.full((G, N), 9, np.float32), np.zeros((G, 2), np.int32)
    w, dx = RNG.random(N).astype(np.float32), np.zeros((R, N), np.float32)
    tp.ln_bwd_dwdb.on(flavour)[(R,)](dy, x, w, dx, mu, rs, dw, db, lock, N, G, BN=128)
    xh = (x - mu[:, None]) * rs[:, None]
    wdy = w * dy
    c1, c2 = (xh * wdy).mean(1, keepdims=True), wdy.mean(1, keepdims=True)
    assert np.allclose(dx, (wdy - (xh * c1 + c2)) * rs[:, None], rtol=1e-4, atol=1e-5)
    assert np.allclose(dw, np.stack([(dy * xh)[g::G].sum(0) for g in range(G)]), rtol=1e-5, atol=1e-5)
    assert np.allclose(db, np.stack([dy[g::G].sum(0) for g in range(G)]), rtol=1e-5, atol=1e-5)
    assert (lock[:, 0] == 0).all() and (lock[:, 1] == 1).all()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_06_causal_attention_on_zhnd_views(flavour):
    """q[z, h] slices of transposed [Z, H, N, D] views, N = 40 (no tile multiple), causal:
    P rounded to f16 (2^-11 relative) before P.V and the output rounded to f16, values ~ 1:
    1e-2."""
    Z, H, N, D = 1, 2, 40, 32
    q, k, v = (RNG.standard_normal((Z, N, H, D)).astype(np.float16).transpose(0, 2, 1, 3) for _ in range(3))
    o = np.zeros((Z, H, N, D), np.float16)
    tp.attn.on(flavour)[(xt.cdiv(N, 16), Z * H)](q, k, v, o, H, N, 1 / np.sqrt(D), BM=16, BN=16, D=D)
    s = np.einsum("zhnd,zhmd->zhnm", q.astype(np.float64), k.astype(np.float64)) / np.sqrt(D)
    s = np.where(np.tril(np.ones((N, N), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    assert np.allclose(o.astype(np.float64), (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64), atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_09_persistent_matmul_sized_by_device_properties(flavour):
    """One program per Xe core of the (emulated) device, tiles strided by num_programs;
    f16 products exact in f32, 48 of them summed: 1e-4."""
    props = xd.device_properties(target="cpu-pvc" if flavour == "interpret" else flavour)
    M, N, K = 100, 70, 48
    a, b = ((RNG.random(s) - .5).astype(np.float16) for s in ((M, K), (K, N)))
    c = np.zeros((M, N), np.float32)
    tp.pmm.on(flavour)[(props["multiprocessor_count"],)](a, b, c, M, N, K, BM=32, BN=32, BK=16)
    assert np.allclose(c, a.astype(np.float64) @ b.astype(np.float64), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_03_fp8_matmul_gelu_epilogue_with_launch_options(flavour):
    """e4m3 inputs (f16 in registers, exact products, f32 sums), an erf GELU, an e5m2
    output (2 mantissa bits) stored under a row mask, launched with num_warps=1 and
    num_stages=3: f32 vs f64 GELU only flips a result at an e5m2 rounding tie, one e5m2
    ulp (25% relative)."""
    import math

    import ml_dtypes
    M, N, K = 70, 64, 72
    a, b = ((RNG.random(s) - .5).astype(ml_dtypes.float8_e4m3fn) for s in ((M, K), (K, N)))
    c = np.zeros((M, N), ml_dtypes.float8_e5m2)
    tp.mm8.on(flavour)[(xt.cdiv(M, 32), xt.cdiv(N, 32))](a, b, c, M, N, K, BM=32, BN=32, BK=32,
                                                         num_warps=1, num_stages=3)
    r = a.astype(np.float64) @ b.astype(np.float64)
    ref = (0.5 * r * (1 + np.vectorize(math.erf)(r / math.sqrt(2)))).astype(np.float32).astype(ml_dtypes.float8_e5m2)
    ref = ref.astype(np.float64)
    assert np.all(np.abs(c.astype(np.float64) - ref) <= 0.25 * np.abs(ref) + 1e-6)


SIGNATURES = {
    "add": ({"x": "f32[:]", "y": "f32[:]", "out": "f32[:]", "n": "i32"}, {"BLOCK": 128}),
    "softmax": ({"x": "f32[:,:]", "y": "f32[:,:]", "n_rows": "i32", "n_cols": "i32"}, {"BN": 128}),
    "mm": ({"a": "f16[:,:]", "b": "f16[:,:]", "c": "f16[:,:]", "M": "i32", "N": "i32", "K": "i32"},
           {"BM": 32, "BN": 32, "BK": 16}),
    "dropout": ({"x": "f32[:]", "out": "f32[:]", "n": "i32", "p": "f32", "seed": "i32"}, {"BLOCK": 256}),
    "ln_fwd": ({"x": "f32[:,:]", "y": "f32[:,:]", "w": "f32[:]", "b": "f32[:]", "mean_out": "f32[:]",
                "rstd_out": "f32[:]", "N": "i32", "eps": "f32"}, {"BN": 128}),
    "ln_bwd_dwdb": ({"dy": "f32[:,:]", "x": "f32[:,:]", "w": "f32[:]", "dx": "f32[:,:]", "mean": "f32[:]", "rstd": "f32[:]", "dw": "f32[:,:]",
                     "db": "f32[:,:]", "lock": "i32[:,:]", "N": "i32", "G": "i32"}, {"BN": 128}),
    "attn": ({"q": "f16[:,:,:,:]", "k": "f16[:,:,:,:]", "v": "f16[:,:,:,:]", "o": "f16[:,:,:,:]", "H": "i32",
              "N": "i32", "scale": "f32"}, {"BM": 16, "BN": 16, "D": 32}),
    "pmm": ({"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "M": "i32", "N": "i32", "K": "i32"},
            {"BM": 32, "BN": 32, "BK": 16}),
}


@pytest.mark.filterwarnings("ignore::xetile_dsl.errors.RegisterSpillWarning")
@pytest.mark.parametrize("target", ["pvc", "arc"])
@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_ports_compile_for_gpu_targets(name, target):
    """Ahead of time for the GPUs (no device needed): every port reaches SPIR-V."""
    sig, constants = SIGNATURES[name]
    k = xd.compile(getattr(tp, name), signature=sig, constants=constants, target=target)
    assert k.asm["spirv"][:4] == b"\x03\x02\x23\x07"   # the SPIR-V magic number, little-endian
