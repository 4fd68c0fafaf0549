"""1-D arrays and tiles (Triton style) on the CPU device, PVC and ARC flavours, and in the
interpreter, against numpy: vector add with a ragged end, 1-D values broadcast with 2-D
ones, reductions of 1-D values to 0-D, rows and columns made of 1-D values, tiles moved
through a loop, and scattered tiles over 1-D arrays."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from conftest_tools import require_dpnp
from xetile_dsl.errors import PerLaneLayoutWarning

FLAVOURS = ["cpu-pvc", "cpu-arc", "interpret"]


@xd.jit
def vector_add(x, y, out, BLOCK: xt.constexpr):
    off = xt.program_id(0) * BLOCK
    vx = xt.load_tile(xt.init_tile(x, [off], [BLOCK]))
    vy = xt.load_tile(xt.init_tile(y, [off], [BLOCK]))
    xt.store_tile(vx + vy, xt.init_tile(out, [off], [BLOCK]))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype, n", [(np.float32, 1000), (np.float16, 1000), (np.float32, 10), (np.int32, 300)])
def test_vector_add(flavour, dtype, n):
    """The last block sticks out of the array: its elements past n are never written (the
    sentinel after ``out[:n]`` stays). One add per element, in the element type: exact
    (f16: the numpy f16 sum rounds the same way)."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(n) * 8).astype(dtype)
    y = (rng.standard_normal(n) * 8).astype(dtype)
    out = np.full(n + 16, 7, dtype)
    view = out[:n]
    vector_add.on(flavour)[(-(-n // 256),)](x, y, view, BLOCK=256)
    np.testing.assert_array_equal(view, x + y)
    assert (out[n:] == 7).all()


def test_vector_add_on_dpnp_arrays():
    """USM arrays used in place; a view starting 4 bytes into its buffer cannot be a 2D
    block surface and takes the per-lane specialisation (with a warning). Exact adds."""
    dpnp = require_dpnp()
    n = 1000
    base = np.arange(n + 1, dtype=np.float32)
    x, y = dpnp.asarray(base[:n]), dpnp.asarray(np.ones(n, np.float32))
    out = dpnp.zeros(n, dtype=np.float32)
    vector_add[(-(-n // 256),)](x, y, out, BLOCK=256)
    np.testing.assert_array_equal(dpnp.asnumpy(out), base[:n] + 1)
    shifted = dpnp.asarray(base)[1:]
    with pytest.warns(PerLaneLayoutWarning, match="'x': first element"):
        vector_add[(-(-n // 256),)](shifted, y, out, BLOCK=256)
    np.testing.assert_array_equal(dpnp.asnumpy(out), base[1:] + 1)


@xd.jit
def bias_rows(x, bias, scale, out, rowsum, BM: xt.constexpr, BN: xt.constexpr):
    """out = x * scale[None, :] + bias (1-D bias broadcast as a row); rowsum = sum(out, 1)."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    b = xt.load_tile(xt.init_tile(bias, [0], [BN]))
    s = xt.load_tile(xt.init_tile(scale, [0], [BN]))
    y = v * s[None, :] + b
    xt.store_tile(y, xt.init_tile(out, [pid * BM, 0], [BM, BN]))
    xt.store_tile(xt.reshape(xt.sum(y, axis=1), [BM]), xt.init_tile(rowsum, [pid * BM], [BM]))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_bias_and_row_sums(flavour):
    """Small integers in f32: every product and sum is exact."""
    rng = np.random.default_rng(1)
    M, N = 32, 32
    x = rng.integers(-4, 5, (M, N)).astype(np.float32)
    bias = rng.integers(-4, 5, N).astype(np.float32)
    scale = rng.integers(-3, 4, N).astype(np.float32)
    out = np.zeros((M, N), np.float32)
    rowsum = np.zeros(M, np.float32)
    bias_rows.on(flavour)[(M // 16,)](x, bias, scale, out, rowsum, BM=16, BN=N)
    want = x * scale + bias
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(rowsum, want.sum(axis=1))


@xd.jit
def block_softmax(x, out, total, BLOCK: xt.constexpr):
    """One program: softmax of a 1-D block (padding -inf past the end), and its 0-D sum
    stored into a one-element tile."""
    t = xt.init_tile(x, [0], [BLOCK])
    v = xt.load_tile(t, padding=float("-inf"))
    e = xt.exp(v - xt.max(v, axis=0))
    s = xt.sum(e)
    xt.store_tile(e / s, xt.init_tile(out, [0], [BLOCK]))
    xt.store_tile(xt.sum(xt.where(v > float("-inf"), v, 0.0)), xt.init_tile(total, [0], [1]))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_one_d_reductions_are_zero_d(flavour):
    """exp/divide in f32: relative error a few ulp per element (rtol 1e-5); the sum of
    small integers is exact."""
    n = 50
    x = np.random.default_rng(2).integers(-6, 6, n).astype(np.float32)
    out = np.zeros(n, np.float32)
    total = np.zeros(1, np.float32)
    block_softmax.on(flavour)[(1,)](x, out, total, BLOCK=64)
    e = np.exp(x - x.max())
    np.testing.assert_allclose(out, e / e.sum(), rtol=1e-5)
    assert total[0] == x.sum()


@xd.jit
def outer(a, b, c, BM: xt.constexpr, BN: xt.constexpr):
    """c = a[:, None] * b[None, :] + rows ids (arange as a column) - column ids (a row)."""
    va = xt.load_tile(xt.init_tile(a, [0], [BM]))
    vb = xt.load_tile(xt.init_tile(b, [0], [BN]))
    rows = xt.expand_dims(xt.arange(0, BM), 1)
    prod = va[:, None] * xt.broadcast_to(vb, [BM, BN])
    xt.store_tile(prod + rows - xt.arange(0, BN), xt.init_tile(c, [0, 0], [BM, BN]))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_columns_and_rows_of_one_d_values(flavour):
    """Integer-valued f32 products and sums: exact."""
    rng = np.random.default_rng(3)
    a = rng.integers(-5, 6, 16).astype(np.float32)
    b = rng.integers(-5, 6, 32).astype(np.float32)
    c = np.zeros((16, 32), np.float32)
    outer.on(flavour)[(1,)](a, b, c, BM=16, BN=32)
    want = a[:, None] * b[None, :] + np.arange(16)[:, None] - np.arange(32)[None, :]
    np.testing.assert_array_equal(c, want)


@xd.jit
def chunk_sums(x, out, n, BLOCK: xt.constexpr):
    """Each program sums 4 blocks of x (a loop moving a 1-D tile, a 1-D accumulator)."""
    pid = xt.program_id(0)
    t = xt.init_tile(x, [pid * BLOCK * 4], [BLOCK])
    acc = xt.zeros([BLOCK], xt.float32)
    for _ in range(4):
        acc += xt.load_tile(t)
        t = xt.update_tile_offset(t, BLOCK)
    xt.store_tile(acc, xt.init_tile(out, [pid * BLOCK], [BLOCK]))
    xt.store_tile(xt.sum(acc, axis=None), xt.init_tile(out, [n + pid], [1]))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_loop_moves_a_one_d_tile(flavour):
    """Integer-valued f32: exact sums."""
    B, P = 32, 3
    x = np.random.default_rng(4).integers(-8, 9, B * 4 * P).astype(np.float32)
    out = np.zeros(B * P + P, np.float32)
    chunk_sums.on(flavour)[(P,)](x, out, B * P, BLOCK=B)
    parts = x.reshape(P, 4, B).sum(axis=1)
    np.testing.assert_array_equal(out[:B * P], parts.reshape(-1))
    np.testing.assert_array_equal(out[B * P:], parts.sum(axis=1))


@xd.jit
def every_other(x, out, n):
    """A scattered tile over a 1-D array: out[i] = x[2 i] for 2 i < n, else -1."""
    offs = xt.arange(0, 16) * 2
    v = xt.load_gather(xt.init_tile(x, offs), offs < n, padding=-1.0)
    xt.store_tile(v, xt.init_tile(out, [0], [16]))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_scattered_tile_of_a_one_d_array(flavour):
    x = np.arange(25, dtype=np.float32)
    out = np.zeros(16, np.float32)
    every_other.on(flavour)[(1,)](x, out, 25)
    want = np.where(np.arange(16) * 2 < 25, np.arange(16) * 2.0, -1.0)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("target", ["pvc", "arc", "bmg"])
def test_one_d_kernels_compile_for_gpus(target, ocloc_path):
    """Compile-only: the GPU code of the 1-D kernels builds (ocloc) for every target."""
    for kernel, sig, consts in (
            (vector_add, {"x": "f16[:]", "y": "f16[:]", "out": "f16[:]"}, {"BLOCK": 256}),
            (bias_rows, {"x": "f32[:,:]", "bias": "f32[:]", "scale": "f32[:]", "out": "f32[:,:]",
                         "rowsum": "f32[:]"}, {"BM": 16, "BN": 32}),
            (chunk_sums, {"x": "f32[:]", "out": "f32[:]", "n": "i32"}, {"BLOCK": 32})):
        compiled = xd.compile(kernel, sig, consts, target=target)
        assert compiled.report().spill_bytes == 0
