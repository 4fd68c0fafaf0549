"""Scalars read from device arrays drive the kernel: a grouped GEMM whose sizes and
offsets come from an int32 table, a gather through an index table (a block table), loops
and branches bounded by values in memory, element writes, Python's min/max/abs on
them, and the out-of-bounds rule (a read outside gives 0, a write outside is dropped).
Compiled for the PVC and ARC flavours of the CPU device and interpreted, against numpy;
all data are small integers, so every result is exact (f32 sums of fewer than 2**24)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from kernels.element_reads import gather_rows, grouped_from_table

TARGETS = ["cpu-pvc", "cpu-arc", "interpret"]
BM = BN = BK = 16


@pytest.mark.parametrize("target", TARGETS)
def test_grouped_gemm_sizes_and_offsets_from_a_device_table(target):
    sizes = [(32, 16, 48), (16, 32, 16), (48, 48, 32)]  # (M, N, K) per group, multiples of 16
    rows, brows = np.cumsum([0] + [m for m, _, _ in sizes]), np.cumsum([0] + [k for _, _, k in sizes])
    meta = np.array([(m, n, k, rows[g], brows[g]) for g, (m, n, k) in enumerate(sizes)], np.int32)
    width, kmax = max(n for _, n, _ in sizes), max(k for _, _, k in sizes)
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (rows[-1], kmax)).astype(np.float16)
    b = rng.integers(-3, 4, (brows[-1], width)).astype(np.float16)
    c = np.full((rows[-1], width), -1.0, np.float32)
    grouped_from_table.on(target)[(len(sizes),)](meta, a, b, c, BM=BM, BN=BN, BK=BK)
    ref = np.full_like(c, -1.0)
    for g, (m, n, k) in enumerate(sizes):
        ga = a[rows[g]:rows[g] + m, :k].astype(np.float32)
        ref[rows[g]:rows[g] + m, :n] = ga @ b[brows[g]:brows[g] + k, :n].astype(np.float32)
    np.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("target", TARGETS)
def test_gather_through_an_index_table(target):
    src = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    table = np.array([[5], [0], [7], [2], [9], [-1]], np.int32)  # 9 and -1: outside src
    out = np.full((6, 16), np.nan, np.float32)
    gather_rows.on(target)[(6,)](table, src, out, W=16)
    ref = np.array([src[i] if 0 <= i < 8 else np.zeros(16, np.float32) for i in table[:, 0]])
    np.testing.assert_array_equal(out, ref)


@xd.jit
def bounded_by_memory(counts, vals, out):
    """Row p: n = counts[p, 0] elements summed by a for, counted by a while, tested by an if."""
    p = xt.program_id(0)
    n = counts[p, 0]
    total = 0
    for i in range(n):
        total += vals[p, i]
    steps = 0
    while steps * 2 < n:
        steps += 1
    sign = 0
    if vals[p, 0] > 0:
        sign = 1
    elif vals[p, 0] < 0:
        sign = -1
    out[p, 0] = total
    out[p, 1] = steps
    out[p, 2] = sign
    out[p, 3] = min(n, 4) + max(n - 5, 0) * 10 + abs(vals[p, 0])
    out[p, 4] = vals[p, 100] + vals[p + 100, 0]  # outside the array: both 0


@pytest.mark.parametrize("target", TARGETS)
def test_loops_and_branches_bounded_by_values_in_memory(target):
    counts = np.array([[3], [0], [7], [16]], np.int32)
    vals = np.random.default_rng(5).integers(-9, 10, (4, 16)).astype(np.float32)
    vals[1, 0] = 0.0
    out = np.full((4, 8), np.nan, np.float32)
    bounded_by_memory.on(target)[(4,)](counts, vals, out)
    n = counts[:, 0]
    ref = np.stack([[vals[p, :n[p]].sum() for p in range(4)], (n + 1) // 2, np.sign(vals[:, 0]),
                    np.minimum(n, 4) + np.maximum(n - 5, 0) * 10 + np.abs(vals[:, 0]), np.zeros(4)], axis=1)
    np.testing.assert_array_equal(out[:, :5], ref)
    assert np.isnan(out[:, 5:]).all()  # nothing else written


@xd.jit
def element_transpose(x, out, R: xt.constexpr, C: xt.constexpr):
    """out[j, i] = x[i, j] element by element, plus writes outside out (dropped) and a
    read-modify-write (+=)."""
    i = xt.program_id(0)
    for j in range(C):
        out[j, i] = x[i, j]
    out[C, i] = x[i, 0]
    out[0, R + i] = x[i, 0]
    out[C - 1, i] += x[i, 0]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.uint8, np.int64], ids=str)
def test_element_reads_and_writes_in_every_dtype(target, dtype):
    R, C = 4, 8
    big = np.random.default_rng(7).integers(0, 50, (R, C + 5)).astype(dtype)
    x = big[:, 2:2 + C]  # a strided view: the row pitch is not the row length
    out = np.zeros((C, R), dtype)
    element_transpose.on(target)[(R,)](x, out, R=R, C=C)
    ref = x.T.copy()
    ref[C - 1] += x[:, 0]
    np.testing.assert_array_equal(out.astype(np.float64), ref.astype(np.float64))


@xd.jit
def item_as_offset(x, out, W: xt.constexpr):
    """xt.item of a [1, 1] tile (a value read as a tile) as a row offset and a stored scalar."""
    row = xt.item(xt.load_tile(xt.init_tile(x, [0, 0], [1, 1])))
    t = xt.load_tile(xt.init_tile(x, [row, 0], [1, W]))
    xt.store_tile(t, xt.init_tile(out, [0, 0], [1, W]))
    out[1, 0] = xt.item(xt.sum(xt.sum(t, axis=1), axis=0))


@pytest.mark.parametrize("target", TARGETS)
def test_item_of_a_one_element_tile_as_offset_and_value(target):
    x = np.arange(4 * 16, dtype=np.int32).reshape(4, 16) % 23
    x[0, 0] = 2
    out = np.zeros((2, 16), np.int32)
    item_as_offset.on(target)[(1,)](x, out, W=16)
    np.testing.assert_array_equal(out[0], x[2])
    assert out[1, 0] == x[2].sum() and (out[1, 1:] == 0).all()


MAP = xt.wg_map([2, 1], [16, 32])


@xd.jit
def workgroup_offset_and_slm_element(offs, x, y, out):
    """Two subgroups: the workgroup tile's row offset read from memory; one element written
    to and read from an SLM buffer (every subgroup writes the same value), and one read
    outside it (0)."""
    p = xt.program_id(0)
    r = offs[p, 0]
    v = xt.load_tile(xt.init_tile(x, [r, 0], [32, 32], wg_map=MAP))
    xt.store_tile(v, xt.init_tile(y, [p * 32, 0], [32, 32], wg_map=MAP))
    s = xt.slm_alloc([4, 8], xt.float32)
    s[1, 2] = x[r, 1]
    xt.barrier()
    out[p, 0] = s[1, 2] + s[9, 0]


@pytest.mark.parametrize("target", TARGETS)
def test_workgroup_kernel_offset_from_memory_and_slm_elements(target):
    offs = np.array([[8], [0]], np.int32)
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    y, out = np.zeros((64, 32), np.float32), np.zeros((2, 1), np.float32)
    workgroup_offset_and_slm_element.on(target)[(2,)](offs, x, y, out)
    np.testing.assert_array_equal(y, np.concatenate([x[8:40], x[:32]]))
    np.testing.assert_array_equal(out[:, 0], [x[8, 1], x[0, 1]])
