"""A grouped GEMM: an outer ``for g`` over groups (each group's rows at an offset in one
stacked A and C, its B below the previous group's), a ``while`` loop over the group's C
tiles shared out among the programs, the K loop inside. Compiled (PVC and ARC flavours)
and interpreted, against numpy on small integers (exact)."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

G, M, N, K = 3, 32, 32, 32
BM, BN, BK = 16, 16, 16
PROGRAMS = 2


@xd.jit
def grouped(a, b, c, M: xt.constexpr, N: xt.constexpr, K: xt.constexpr, G: xt.constexpr,
            BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, NP: xt.constexpr):
    tile = xt.program_id(0)
    last = 0
    for g in range(G):
        ntiles = (M // BM) * (N // BN)
        while tile >= last and tile < last + ntiles:
            t = tile - last
            row = g * M + (t // (N // BN)) * BM
            col = (t % (N // BN)) * BN
            ta = xt.init_tile(a, [row, 0], [BM, BK])
            tb = xt.init_tile(b, [g * K, col], [BK, BN])
            acc = xt.zeros([BM, BN], xt.float32)
            for k in range(0, K, BK):
                acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
                ta = xt.update_tile_offset(ta, 0, BK)
                tb = xt.update_tile_offset(tb, BK, 0)
            xt.store_tile(acc, xt.init_tile(c, [row, col], [BM, BN]))
            tile = tile + NP
        last = last + ntiles


@pytest.mark.parametrize("target", ["cpu", "cpu-arc", "interpret"])
def test_grouped_gemm(target):
    rng = np.random.default_rng(9)
    a = rng.integers(-3, 4, (G * M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (G * K, N)).astype(np.float16)
    c = np.full((G * M, N), np.nan, np.float32)
    grouped.on(target)[(PROGRAMS,)](a, b, c, M=M, N=N, K=K, G=G, BM=BM, BN=BN, BK=BK, NP=PROGRAMS)
    ref = np.concatenate([a[g * M:(g + 1) * M].astype(np.float32) @ b[g * K:(g + 1) * K].astype(np.float32)
                          for g in range(G)])
    np.testing.assert_array_equal(c, ref)


@xd.jit
def grouped_carried(a, b, c, M: xt.constexpr, N: xt.constexpr, K: xt.constexpr, G: xt.constexpr,
                    BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, NP: xt.constexpr):
    """The same GEMM with the loaded operands va / vb and the accumulator defined before
    the loops: all three loops (for g, while, for k) carry them, B's VNNI-packed blocks
    and A's lane layout included."""
    tile = xt.program_id(0)
    last = 0
    acc = xt.zeros([BM, BN], xt.float32)
    ta = xt.init_tile(a, [0, 0], [BM, BK])
    tb = xt.init_tile(b, [0, 0], [BK, BN])
    va = xt.load_tile(ta)
    vb = xt.load_tile(tb)
    for g in range(G):
        ntiles = (M // BM) * (N // BN)
        while tile >= last and tile < last + ntiles:
            t = tile - last
            row = g * M + (t // (N // BN)) * BM
            col = (t % (N // BN)) * BN
            ta = xt.init_tile(a, [row, 0], [BM, BK])
            tb = xt.init_tile(b, [g * K, col], [BK, BN])
            acc = xt.zeros([BM, BN], xt.float32)
            for k in range(0, K, BK):
                va = xt.load_tile(ta)
                vb = xt.load_tile(tb)
                acc = xt.tile_mma(va, vb, acc)
                ta = xt.update_tile_offset(ta, 0, BK)
                tb = xt.update_tile_offset(tb, BK, 0)
            xt.store_tile(acc, xt.init_tile(c, [row, col], [BM, BN]))
            tile = tile + NP
        last = last + ntiles


@pytest.mark.parametrize("target", ["cpu", "cpu-arc", "interpret"])
def test_grouped_gemm_carried_operands(target):
    rng = np.random.default_rng(11)
    a = rng.integers(-3, 4, (G * M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (G * K, N)).astype(np.float16)
    c = np.full((G * M, N), np.nan, np.float32)
    grouped_carried.on(target)[(PROGRAMS,)](a, b, c, M=M, N=N, K=K, G=G, BM=BM, BN=BN, BK=BK, NP=PROGRAMS)
    ref = np.concatenate([a[g * M:(g + 1) * M].astype(np.float32) @ b[g * K:(g + 1) * K].astype(np.float32)
                          for g in range(G)])
    np.testing.assert_array_equal(c, ref)


@xd.jit
def while_carried(a, b, c, T: xt.constexpr, K: xt.constexpr):
    """A while over a counter carries the accumulator (never reset) and va / vb through a K
    loop; the last va / vb leave both loops (loop results) and feed one more tile_mma."""
    acc = xt.zeros([16, 16], xt.float32)
    ta = xt.init_tile(a, [0, 0], [16, 16])
    tb = xt.init_tile(b, [0, 0], [16, 16])
    va = xt.load_tile(ta)
    vb = xt.load_tile(tb)
    i = 0
    while i < T:
        ta = xt.init_tile(a, [i * 16, 0], [16, 16])
        tb = xt.init_tile(b, [0, 0], [16, 16])
        for k in range(0, K, 16):
            va = xt.load_tile(ta)
            vb = xt.load_tile(tb)
            acc = xt.tile_mma(va, vb, acc)
            ta = xt.update_tile_offset(ta, 0, 16)
            tb = xt.update_tile_offset(tb, 16, 0)
        i = i + 1
    acc = xt.tile_mma(va, vb, acc)
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [16, 16]))


@pytest.mark.parametrize("target", ["cpu", "cpu-arc", "interpret"])
def test_while_carried_accumulator_and_operands(target):
    t, k = 3, 32
    rng = np.random.default_rng(12)
    a = rng.integers(-3, 4, (t * 16, k)).astype(np.float16)
    b = rng.integers(-3, 4, (k, 16)).astype(np.float16)
    c = np.full((16, 16), np.nan, np.float32)
    while_carried.on(target)[(1,)](a, b, c, T=t, K=k)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    ref = sum(af[i * 16:(i + 1) * 16] @ bf for i in range(t)) + af[(t - 1) * 16:, k - 16:] @ bf[k - 16:]
    np.testing.assert_array_equal(c, ref)


@xd.jit
def grouped_ragged(a, b, c, G, N, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, NP: xt.constexpr):
    """Groups of different heights ((g + 1) * BM rows) stacked in one A and C, the sizes
    runtime scalars, the accumulator defined once before the loops and cleared per tile."""
    tile = xt.program_id(0)
    last = 0
    row0 = 0
    acc = xt.zeros([BM, BN], xt.float32)
    for g in range(G):
        gm = (g + 1) * BM
        ntiles = xt.cdiv(gm, BM) * xt.cdiv(N, BN)
        while tile < last + ntiles:
            t = tile - last
            row = row0 + (t // xt.cdiv(N, BN)) * BM
            col = (t % xt.cdiv(N, BN)) * BN
            ta = xt.init_tile(a, [row, 0], [BM, BK])
            tb = xt.init_tile(b, [g * K, col], [BK, BN])
            acc = acc * 0.0
            for k in range(0, K, BK):
                acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
                ta = xt.update_tile_offset(ta, 0, BK)
                tb = xt.update_tile_offset(tb, BK, 0)
            xt.store_tile(acc, xt.init_tile(c, [row, col], [BM, BN]))
            tile = tile + NP
        last = last + ntiles
        row0 = row0 + gm


@pytest.mark.parametrize("target", ["cpu", "cpu-arc", "interpret"])
def test_grouped_gemm_ragged_groups_with_runtime_sizes(target):
    rng = np.random.default_rng(1)
    heights = [(g + 1) * BM for g in range(G)]
    a = rng.integers(-3, 4, (sum(heights), K)).astype(np.float16)
    b = rng.integers(-3, 4, (G * K, N)).astype(np.float16)
    c = np.full((sum(heights), N), np.nan, np.float32)
    grouped_ragged.on(target)[(PROGRAMS,)](a, b, c, G, N, K, BM=BM, BN=BN, BK=BK, NP=PROGRAMS)
    starts = np.cumsum([0] + heights)
    ref = np.concatenate([a[starts[g]:starts[g + 1]].astype(np.float32) @ b[g * K:(g + 1) * K].astype(np.float32)
                          for g in range(G)])
    np.testing.assert_array_equal(c, ref)
