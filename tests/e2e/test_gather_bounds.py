"""Scattered lanes outside the array are bounds-checked like tiles, in every flavour: a
load_gather lane whose element offset is negative or not below the array's element span
reads the padding value (as a masked-off lane does) and a store_scatter lane there writes
nothing (no stray read or write when compiled, no error in the interpreter).  Exact
integer data against numpy, with masked-off lanes mixed in."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

FLAVOURS = ["cpu-pvc", "cpu-arc", "interpret"]
PAD = -7


@xd.jit
def gather_oob(src, idx, out, R: xt.constexpr, C: xt.constexpr, PAD: xt.constexpr):
    offs = xt.load_tile(xt.init_tile(idx, [0, 0], [R, C]))
    v = xt.load_gather(xt.init_tile(src, offs), offs % 5 != 2, padding=PAD)
    xt.store_tile(v, xt.init_tile(out, [0, 0], [R, C]))


@xd.jit
def scatter_oob(val, idx, dst, R: xt.constexpr, C: xt.constexpr):
    offs = xt.load_tile(xt.init_tile(idx, [0, 0], [R, C]))
    v = xt.load_tile(xt.init_tile(val, [0, 0], [R, C]))
    xt.store_scatter(v, xt.init_tile(dst, offs), offs % 5 != 2)


def _offsets(rows, cols, size):
    """Distinct offsets in [-40, size + 40): both ends outside the array, some masked (o % 5 == 2)."""
    offs = np.random.default_rng(3).permutation(np.arange(-40, size + 40))[:rows * cols]
    offs = offs.astype(np.int32).reshape(rows, cols)
    assert (offs < 0).any() and (offs >= size).any() and (offs % 5 == 2).any()
    return offs


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float16])
@pytest.mark.parametrize("offset_dtype", [np.int32, np.int64])
def test_gather_lanes_outside_the_array_read_padding(offset_dtype, dtype, flavour):
    R, C = 2, 32
    src = (np.arange(48) - 20).astype(dtype).reshape(3, 16)
    offs = _offsets(R, C, src.size).astype(offset_dtype)
    out = np.zeros((R, C), dtype)
    gather_oob.on(flavour)[(1,)](src, offs, out, R=R, C=C, PAD=PAD)
    inside = (offs >= 0) & (offs < src.size) & (offs % 5 != 2)
    ref = np.where(inside, src.reshape(-1)[np.clip(offs, 0, src.size - 1)], PAD).astype(dtype)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", [np.int32, np.float16])
def test_scatter_lanes_outside_the_array_write_nothing(dtype, flavour):
    """``dst`` is a view of the middle rows of a larger array: a stray write would land in
    the guard rows around it."""
    R, C = 2, 32
    big = np.full((5, 16), 99, dtype)
    dst = big[1:4]
    val = (np.arange(R * C) + 1).astype(dtype).reshape(R, C)
    offs = _offsets(R, C, dst.size)
    scatter_oob.on(flavour)[(1,)](val, offs, dst, R=R, C=C)
    ref = np.full((5, 16), 99, dtype)
    keep = (offs >= 0) & (offs < dst.size) & (offs % 5 != 2)
    ref[1:4].reshape(-1)[offs[keep]] = val[keep]
    np.testing.assert_array_equal(big, ref)


# --- reductions of gathered values ----------------------------------------------------------
@xd.jit
def gather_reduce(src, idx, out, R: xt.constexpr, C: xt.constexpr, AX: xt.constexpr, OP: xt.constexpr):
    offs = xt.load_tile(xt.init_tile(idx, [0, 0], [R, C]))
    v = xt.load_gather(xt.init_tile(src, offs), offs % 5 != 2)
    if OP == "sum":
        r = xt.sum(v, axis=AX)
    elif OP == "max":
        r = xt.max(v, axis=AX)
    else:
        r = xt.min(v, axis=AX)
    if AX == 1:
        xt.store_tile(r, xt.init_tile(out, [0, 0], [R, 1]))
    else:
        xt.store_tile(r, xt.init_tile(out, [0, 0], [1, C]))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("rows,axis", [(4, 1), (4, 0), (1, 1), (1, 0), (2, 1)])
def test_reduce_of_a_gather(rows, axis, op, dtype, flavour):
    """A row reduction of a multi-row gather (its values blocked one row per block) gives
    one result block per row; column reductions and 1-row gathers too."""
    C = 32
    src = ((np.arange(96) * 7) % 23 - 11).astype(dtype).reshape(3, 32)
    offs = _offsets(rows, C, src.size) if rows > 1 else np.arange(5, 5 + C, dtype=np.int32).reshape(1, C)
    out = np.zeros((rows, 1) if axis == 1 else (1, C), dtype)
    gather_reduce.on(flavour)[(1,)](src, offs, out, R=rows, C=C, AX=axis, OP=op)
    keep = (offs >= 0) & (offs < src.size) & (offs % 5 != 2)
    v = np.where(keep, src.reshape(-1)[np.clip(offs, 0, src.size - 1)], 0).astype(dtype)
    ref = getattr(np, op)(v, axis=axis, keepdims=True)
    np.testing.assert_array_equal(out, ref)


# --- atomic_rmw on scattered tiles -----------------------------------------------------------
@xd.jit
def atomic_oob(val, idx, dst, old, R: xt.constexpr, C: xt.constexpr, MASKED: xt.constexpr):
    offs = xt.load_tile(xt.init_tile(idx, [0, 0], [R, C]))
    v = xt.load_tile(xt.init_tile(val, [0, 0], [R, C]))
    if MASKED:
        o = xt.atomic_rmw("add", v, xt.init_tile(dst, offs), mask=offs % 5 != 2)
    else:
        o = xt.atomic_rmw("add", v, xt.init_tile(dst, offs))
    xt.store_tile(o, xt.init_tile(old, [0, 0], [R, C]))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize("masked", [True, False])
def test_atomic_lanes_outside_the_array_do_nothing(masked, dtype, flavour):
    """An atomic lane outside the array (or masked off) updates nothing (the guard rows of
    the larger array around the ``dst`` view stay) and returns 0 as its old value."""
    R, C = 2, 32
    big = np.full((5, 16), 99, dtype)
    big[1:4] = (np.arange(48) % 7).astype(dtype).reshape(3, 16)
    dst = big[1:4]
    val = (np.arange(R * C) + 1).astype(dtype).reshape(R, C)
    offs = _offsets(R, C, dst.size)
    old = np.full((R, C), -1, dtype)
    ref = big.copy()
    atomic_oob.on(flavour)[(1,)](val, offs, dst, old, R=R, C=C, MASKED=masked)
    keep = (offs >= 0) & (offs < dst.size) & ((offs % 5 != 2) if masked else True)
    flat = ref[1:4].reshape(-1).copy()
    ref_old = np.where(keep, flat[np.clip(offs, 0, flat.size - 1)], 0).astype(dtype)
    flat[offs[keep]] += val[keep]  # offsets are distinct
    ref[1:4] = flat.reshape(3, 16)
    np.testing.assert_array_equal(big, ref)
    np.testing.assert_array_equal(old, ref_old)


# --- scattered tiles carried through loops and ifs ------------------------------------------
@xd.jit
def gather_carried(src, idx, out, C: xt.constexpr, N: xt.constexpr, STEP: xt.constexpr):
    offs = xt.load_tile(xt.init_tile(idx, [0, 0], [1, C]))
    t = xt.init_tile(src, offs)
    for i in range(N):
        v = xt.load_gather(t, offs % 5 != 2, padding=PAD)
        xt.store_tile(v, xt.init_tile(out, [i, 0], [1, C]))
        offs = offs + STEP
        t = xt.init_tile(src, offs)


@xd.jit
def gather_chosen(src, other, idx, out, C: xt.constexpr, FIRST: xt.constexpr):
    offs = xt.load_tile(xt.init_tile(idx, [0, 0], [1, C]))
    if xt.program_id(0) == FIRST:
        t = xt.init_tile(src, offs)
    else:
        t = xt.init_tile(other, offs - 8)
    v = xt.load_gather(t, offs % 5 != 2, padding=PAD)
    xt.store_tile(v, xt.init_tile(out, [0, 0], [1, C]))


def _gather_ref(flat, offs, masked_by=None):
    masked_by = offs if masked_by is None else masked_by
    keep = (offs >= 0) & (offs < flat.size) & (masked_by % 5 != 2)
    return np.where(keep, flat[np.clip(offs, 0, flat.size - 1)], PAD)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_gather_on_a_loop_carried_tile_walks_off_the_array(flavour):
    """The tile is a loop's carried value (each iteration moves it 24 elements on): the
    gathers of the last iterations run past the array's end and read the padding."""
    C, N, STEP = 32, 4, 24
    big = np.full((5, 16), 99, np.int32)  # guard rows around the array: a stray read shows 99
    big[1:4] = (np.arange(48) - 20).reshape(3, 16)
    src = big[1:4]
    offs = (np.arange(C, dtype=np.int32) * 3 % 41 - 4).reshape(1, C)
    out = np.zeros((N, C), np.int32)
    gather_carried.on(flavour)[(1,)](src, offs, out, C=C, N=N, STEP=STEP)
    ref = np.stack([_gather_ref(src.reshape(-1), offs[0] + i * STEP) for i in range(N)]).astype(np.int32)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("first", [0, 1])
def test_gather_on_a_tile_chosen_in_an_if(first, flavour):
    """The tile is an ``if`` result (two arrays of different sizes): each branch's array bounds it."""
    C = 32
    big = np.full((5, 16), 99, np.int32)  # guard rows around the arrays: a stray read shows 99
    big[1:4] = (np.arange(48) - 20).reshape(3, 16)
    big2 = np.full((4, 10), 99, np.int32)
    big2[1:3] = (np.arange(20) + 100).reshape(2, 10)
    src, other = big[1:4], big2[1:3]
    offs = (np.arange(C, dtype=np.int32) * 3 % 61 - 6).reshape(1, C)
    out = np.zeros((1, C), np.int32)
    gather_chosen.on(flavour)[(1,)](src, other, offs, out, C=C, FIRST=first)
    ref = _gather_ref(src.reshape(-1), offs[0]) if first == 0 else _gather_ref(other.reshape(-1), offs[0] - 8, offs[0])
    np.testing.assert_array_equal(out[0], ref.astype(np.int32))


@xd.jit
def atomic_while_carried(src, idx, out, C: xt.constexpr):
    offs = xt.load_tile(xt.init_tile(idx, [0, 0], [1, C]))
    t = xt.init_tile(src, offs)
    i = 0
    while i < 3:
        o = xt.atomic_rmw("add", offs * 0 + 1, t)
        xt.store_tile(o, xt.init_tile(out, [i, 0], [1, C]))
        offs = offs + 20
        t = xt.init_tile(src, offs)
        i = i + 1


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_atomic_on_a_while_carried_tile_walks_off_the_array(flavour):
    """An atomic on a ``while``-carried scattered tile: lanes past the end (or before the
    start) update nothing (the guard rows stay 99) and return 0."""
    big = np.full((5, 16), 99, np.int32)
    big[1:4] = np.arange(48).reshape(3, 16)
    offs = (np.arange(32, dtype=np.int32) - 4).reshape(1, 32)
    out = np.zeros((3, 32), np.int32)
    ref, ref_old = big.copy(), np.zeros((3, 32), np.int32)
    flat = ref[1:4].reshape(-1).copy()
    for i in range(3):
        o = offs[0] + 20 * i
        keep = (o >= 0) & (o < flat.size)
        ref_old[i] = np.where(keep, flat[np.clip(o, 0, flat.size - 1)], 0)
        flat[o[keep]] += 1
    ref[1:4] = flat.reshape(3, 16)
    atomic_while_carried.on(flavour)[(1,)](big[1:4], offs, out, C=32)
    np.testing.assert_array_equal(big, ref)
    np.testing.assert_array_equal(out, ref_old)
