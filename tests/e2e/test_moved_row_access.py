"""Block atomics and stores to order=[0, 1] tiles on tiles moved by update_tile_offset
(loops, column moves, a tile that is also loaded): their per-row scattered accesses take
the tile's position from the offsets the XeGPU conversion carries next to its descriptors
(lowering/rewrites/scattered.py: RowOffsets). CPU device, both flavours, against numpy and the
interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

FLAVOURS = ["pvc", "arc"]
MODES = [f"cpu-{f}" for f in FLAVOURS] + ["interpret"]


@xd.jit
def atomic_down_rows(x, out, old, STEPS: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr, KIND: xt.constexpr):
    """out <KIND>= x, one BM x BN block per step moving down the rows (program_id(0) picks
    the column band); ``old`` receives the values the atomics saw."""
    n = xt.program_id(0) * BN
    tx = xt.init_tile(x, [0, n], [BM, BN])
    to = xt.init_tile(out, [0, n], [BM, BN])
    told = xt.init_tile(old, [0, n], [BM, BN])
    for _ in range(STEPS):
        xt.store_tile(xt.atomic_rmw(KIND, xt.load_tile(tx), to), told)
        tx = xt.update_tile_offset(tx, BM, 0)
        to = xt.update_tile_offset(to, BM, 0)
        told = xt.update_tile_offset(told, BM, 0)


@xd.jit
def atomic_doubling_across(out, STEPS: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr):
    """out[:, block] += out[:, block] moving right along the columns: the tile is loaded
    (its descriptors) and atomically updated (its offsets) in the same loop."""
    t = xt.init_tile(out, [0, 0], [BM, BN])
    for _ in range(STEPS):
        xt.atomic_rmw("addf", xt.load_tile(t), t)
        t = xt.update_tile_offset(t, 0, BN)


@xd.jit
def store_transposed_down(x, y, STEPS: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr):
    """y = x^T through an order=(0, 1) view of y that moves with x's tile down x's rows."""
    tx = xt.init_tile(x, [0, 0], [BM, BN])
    ty = xt.init_tile(y, [0, 0], [BM, BN], order=(0, 1))
    for _ in range(STEPS):
        xt.store_tile(xt.load_tile(tx) * 2, ty)
        tx = xt.update_tile_offset(tx, BM, 0)
        ty = xt.update_tile_offset(ty, BM, 0)


@xd.jit
def store_transposed_runtime_moves(x, y, dm, dn, BM: xt.constexpr, BN: xt.constexpr):
    """A transposed store after a runtime move (no loop): y^T[dm:, dn:] = x[dm:, dn:] block."""
    tx = xt.update_tile_offset(xt.init_tile(x, [0, 0], [BM, BN]), dm, dn)
    ty = xt.update_tile_offset(xt.init_tile(y, [0, 0], [BM, BN], order=(0, 1)), dm, dn)
    xt.store_tile(xt.load_tile(tx), ty)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind,dtype", [("addf", np.float32), ("maximumf", np.float32), ("addi", np.int32)])
def test_block_atomics_on_a_tile_moving_down(mode, kind, dtype):
    """40 rows in 3 steps of 16: the third block is half outside (masked off)."""
    rng = np.random.default_rng(51)
    x = rng.integers(-50, 50, (40, 64)).astype(dtype)
    start = rng.integers(-50, 50, (40, 64)).astype(dtype)
    out, old = start.copy(), np.full((48, 64), 99, dtype)
    atomic_down_rows.on(mode)[(2,)](x, out, old, STEPS=3, BM=16, BN=32, KIND=kind)
    combine = {"addf": np.add, "addi": np.add, "maximumf": np.maximum}[kind]
    np.testing.assert_array_equal(out, combine(start, x))
    np.testing.assert_array_equal(old[:40], start)


@pytest.mark.parametrize("mode", MODES)
def test_loaded_and_atomically_updated_tile_moving_right(mode):
    out = np.random.default_rng(52).integers(-9, 9, (16, 96)).astype(np.float32)
    ref = out * 2
    atomic_doubling_across.on(mode)[(1,)](out, STEPS=3, BM=16, BN=32)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_transposed_store_on_a_tile_moving_down(mode, dtype):
    x = (np.arange(40 * 32) % 251).reshape(40, 32).astype(dtype)
    y = np.full((32, 40), 3, dtype)
    store_transposed_down.on(mode)[(1,)](x, y, STEPS=3, BM=16, BN=32)
    np.testing.assert_array_equal(y, (2 * x).T)


@pytest.mark.parametrize("mode", MODES)
def test_transposed_store_after_runtime_moves(mode):
    x = np.random.default_rng(53).standard_normal((48, 64)).astype(np.float32)
    y = np.zeros((64, 48), np.float32)
    store_transposed_runtime_moves.on(mode)[(1,)](x, y, 24, 16, BM=16, BN=32)
    ref = np.zeros_like(y)
    ref[16:48, 24:40] = x[24:40, 16:48].T
    np.testing.assert_array_equal(y, ref)


@xd.jit
def store_transposed_either(x, y, flag):
    """y^T rows 0..15 or 16..31 (runtime choice between two init_tiles of y) = x block."""
    ty = xt.init_tile(y, [0, 0], [16, 32], order=(0, 1))
    if flag > 0:
        ty = xt.init_tile(y, [16, 0], [16, 32], order=(0, 1))
    xt.store_tile(xt.load_tile(xt.init_tile(x, [0, 0], [16, 32])), ty)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("flag", [0, 1])
def test_transposed_store_through_an_if(mode, flag):
    """flag = 1 is specialised to a constant: the if folds and the first init_tile is dead
    (which the XeGPU conversion used to crash on for order=(0, 1) tiles)."""
    x = np.random.default_rng(54).standard_normal((16, 32)).astype(np.float32)
    y = np.zeros((32, 32), np.float32)
    store_transposed_either.on(mode)[(1,)](x, y, flag)
    ref = np.zeros_like(y)
    ref[:, 16 * flag:16 * flag + 16] = x.T
    np.testing.assert_array_equal(y, ref)
