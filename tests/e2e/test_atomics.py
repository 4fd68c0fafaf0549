"""Atomics with memory order end to end: a spin lock, a ticket counter, every atomic_rmw
kind on one element and on tiles, and layer norm's backward pass with Triton's lock
scheme, on the CPU device (PVC and ARC flavours) and in the interpreter, against numpy.

Each launch runs in a thread that must finish within :data:`HANG_LIMIT` seconds: a spin
lock that never opens fails the test instead of blocking the run (the limit is far above
any compile and launch here; it only turns a hang into a failure)."""
from __future__ import annotations

import threading

import ml_dtypes
import numpy as np
import pytest

from kernels.atomics import (element_rmw_kernel, layer_norm_bwd_dwdb, layer_norm_bwd_dx_fused, scattered_cas_kernel,
                             spin_lock_kernel, ticket_kernel, tile_atomics_kernel, tile_cas_kernel)

FLAVOURS = ["cpu-pvc", "cpu-arc", "interpret"]
HANG_LIMIT = 600
U = 2.0 ** -24  # f32 unit roundoff


def launch(kernel, flavour, grid, *args, **constexprs):
    """``kernel.on(flavour)[grid](*args, **constexprs)``; fails if it has not returned
    after HANG_LIMIT seconds (a hang), re-raises its error."""
    errors = []

    def run():
        try:
            kernel.on(flavour)[grid](*args, **constexprs)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG_LIMIT)
    assert not thread.is_alive(), f"{kernel.__name__} on {flavour} did not return: a spin that never ends"
    if errors:
        raise errors[0]


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("acq,rel,scope", [("acquire", "release", "device"), ("acq_rel", "acq_rel", "device"),
                                           ("acquire", "release", "workgroup")])
def test_spin_lock(flavour, acq, rel, scope):
    P = 48
    lock, total = np.zeros((1, 1), np.int32), np.zeros((1, 16), np.float32)
    launch(spin_lock_kernel, flavour, (P,), lock, total, SEM_ACQ=acq, SEM_REL=rel, SCOPE=scope)
    assert lock[0, 0] == 0
    # integers below 2^24: every f32 sum is exact
    np.testing.assert_array_equal(total, np.full((1, 16), P * (P + 1) // 2, np.float32))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_tickets_are_a_permutation(flavour):
    P = 40
    counter, tickets = np.zeros((1, 1), np.int32), np.full((1, P), -1, np.int32)
    launch(ticket_kernel, flavour, (P,), counter, tickets)
    assert counter[0, 0] == P
    np.testing.assert_array_equal(np.sort(tickets[0]), np.arange(P))


_COMBINE = {"add": np.add, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
            "xor": np.bitwise_xor, "xchg": None}
_INT_CASES = [(k, d) for d in ("i32", "u32", "i64") for k in _COMBINE]
_FLOAT_CASES = [(k, d) for d in ("f32",) for k in ("add", "max", "min", "xchg")] + [("add", "f16"), ("add", "bf16")]
_NP = {"i32": np.int32, "u32": np.uint32, "i64": np.int64, "f32": np.float32, "f16": np.float16,
       "bf16": ml_dtypes.bfloat16}


def _values(dtype: str, count: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    if dtype == "i64":  # past 32 bits, both signs
        return (rng.integers(-2**40, 2**40, count)).astype(np.int64)
    if dtype == "u32":  # the top bit set in some: unsigned max/min differ from signed
        return rng.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32)
    if dtype == "i32":
        return rng.integers(-2**31, 2**31, count).astype(np.int32)
    # small integers: every float sum here is exact, so any order gives the same result
    return rng.integers(-20, 21, count).astype(_NP[dtype])


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("kind,dtype", _INT_CASES + _FLOAT_CASES)
def test_element_rmw(flavour, kind, dtype):
    """Program p combines vals[p] into x[p % 2, 1]; the final elements are the fold of
    their programs' values (any order: the kinds commute; xchg leaves one of them), and
    the old values chain: each program saw the element some other program left."""
    P = 12
    vals = _values(dtype, P).reshape(1, P)
    init = _values(dtype, 6)[::-1].reshape(2, 3).copy()
    x, old = init.copy(), np.zeros((1, P), vals.dtype)
    launch(element_rmw_kernel, flavour, (P,), x, vals, old, KIND=kind)
    expect = init.copy()
    for e in (0, 1):
        mine = vals[0, e::2]
        if kind == "xchg":
            assert x[e, 1] in mine
            seen = sorted(old[0, e::2].tolist() + [x[e, 1]], key=float)
            assert seen == sorted(mine.tolist() + [init[e, 1]], key=float)
            expect[e, 1] = x[e, 1]
            continue
        with np.errstate(over="ignore"):
            for v in mine:
                expect[e, 1] = _COMBINE[kind](expect[e, 1], v)
        assert all(o in _prefixes(init[e, 1], old[0, e::2], mine, kind) for o in old[0, e::2])
    np.testing.assert_array_equal(x, expect)


def _prefixes(start, olds, mine, kind):
    """The values the element can hold: ``start`` and every value an old one led to."""
    with np.errstate(over="ignore"):
        return {start, *(_COMBINE[kind](o, v) for o, v in zip(olds, mine))}


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("kind,dtype,sem", [("xor", "i32", "relaxed"), ("xchg", "i32", "release"),
                                            ("add", "f16", "acq_rel"), ("add", "bf16", "acquire"),
                                            ("max", "f32", "relaxed"), ("or", "i64", "acq_rel")])
def test_tile_atomics(flavour, kind, dtype, sem):
    """G programs fold a [4, 16] block into ``out`` with the tile form (xchg: every program
    writes the same block, the last one wins, old values are earlier blocks)."""
    G = 4
    rng = np.random.default_rng(3)
    x = (rng.integers(0, 8, (G * 4, 16)) if dtype != "i64" else rng.integers(0, 2**40, (G * 4, 16)))
    x = x.astype(_NP[dtype])
    if kind == "xchg":
        x = np.tile(x[:4], (G, 1))
    out = np.zeros((4, 16), x.dtype)
    launch(tile_atomics_kernel, flavour, (G,), x, out, KIND=kind, SEM=sem)
    ref = np.zeros((4, 16), x.dtype)
    for g in range(G):
        block = x[g * 4:(g + 1) * 4]
        ref = block if kind == "xchg" else _COMBINE[kind](ref, block)  # small integers: exact in any order
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("flavour,dtype,sem,scope", [
    ("interpret", "i32", "relaxed", "device"), ("interpret", "u32", "acquire", "workgroup"),
    ("interpret", "i64", "release", "device"), ("cpu-pvc", "i32", "acq_rel", "device"),
    ("cpu-pvc", "i64", "acquire", "device"), ("cpu-arc", "u32", "release", "workgroup")])
def test_tile_compare_exchange(flavour, dtype, sem, scope):
    """Each of G programs compare-and-swaps its own [4, 16] rows: the old values are the
    initial ones, and memory takes ``val`` exactly where the initial value equals ``cmp``
    (about a quarter of the elements).  Then all G programs claim one shared block with
    cmp 0, val g + 1: every element ends with one program's mark, that program saw 0, and
    each of the others saw the mark (a claim is atomic: no two programs win an element)."""
    G = 4
    rng = np.random.default_rng(11)
    x0 = rng.integers(0, 4, (G * 4, 16)).astype(_NP[dtype])
    cmp = rng.integers(0, 4, (G * 4, 16)).astype(_NP[dtype])
    val = _values(dtype, G * 64).reshape(G * 4, 16)
    x, old, claim = x0.copy(), np.full_like(x0, 5), np.zeros((4, 16), x0.dtype)
    seen = np.full_like(x0, 5)
    launch(tile_cas_kernel, flavour, (G,), x, cmp, val, old, claim, seen, SEM=sem, SCOPE=scope)
    np.testing.assert_array_equal(old, x0)
    np.testing.assert_array_equal(x, np.where(x0 == cmp, val, x0))
    assert ((claim >= 1) & (claim <= G)).all()
    seen = seen.reshape(G, 4, 16)
    winner = claim.astype(np.int64) - 1
    for g in range(G):
        np.testing.assert_array_equal(seen[g], np.where(winner == g, 0, claim))


@pytest.mark.parametrize("flavour", ["interpret", "cpu-pvc"])
def test_scattered_compare_exchange_with_mask(flavour):
    """Through a scattered tile (offsets a permutation of the 32 elements, then 16 lanes off
    the array), lanes with ``idx % 3 == 1`` masked off: a masked-off or outside lane
    touches nothing and returns 0; the others swap where memory equals cmp."""
    C = 48
    rng = np.random.default_rng(5)
    outside = [-3, 40, 32, 99, -1, 33, 1000, -50, -7, 77, 45, 64, -9, 50, 70, 36]
    idx = np.concatenate([rng.permutation(32), outside]).astype(np.int32)[None]
    x0 = rng.integers(0, 3, (2, 16)).astype(np.int32)
    cmp = rng.integers(0, 3, (1, C)).astype(np.int32)
    val = np.arange(100, 100 + C, dtype=np.int32)[None]
    x, old = x0.copy(), np.full((1, C), -1, np.int32)
    launch(scattered_cas_kernel, flavour, (1,), x, idx, cmp, val, old, C=C)
    flat0, ref = x0.reshape(-1), x0.reshape(-1).copy()
    live = (idx[0] >= 0) & (idx[0] < 32) & (idx[0] % 3 != 1)
    at = idx[0][live]
    swap = flat0[at] == cmp[0][live]
    ref[at[swap]] = val[0][live][swap]
    np.testing.assert_array_equal(old[0], np.where(live, flat0[np.clip(idx[0], 0, 31)], 0))
    np.testing.assert_array_equal(x.reshape(-1), ref)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_layer_norm_backward_with_locks(flavour):
    M, N, BN, GROUP = 64, 200, 256, 8
    rng = np.random.default_rng(0)
    x = rng.standard_normal((M, N)).astype(np.float32)
    dy = rng.standard_normal((M, N)).astype(np.float32)
    w = rng.standard_normal((1, N)).astype(np.float32)
    mean = x.mean(1, keepdims=True).astype(np.float32)
    rstd = (1 / np.sqrt(x.var(1, keepdims=True) + 1e-5)).astype(np.float32)
    dx = np.zeros_like(x)
    dw_part, db_part = np.zeros((GROUP, N), np.float32), np.zeros((GROUP, N), np.float32)
    lock, count = np.zeros((GROUP, 1), np.int32), np.zeros((GROUP, 1), np.int32)
    launch(layer_norm_bwd_dx_fused, flavour, (M,), dx, dy, dw_part, db_part, x, w, mean, rstd, lock, count, N,
           GROUP=GROUP, BN=BN)
    dw, db = np.zeros((1, N), np.float32), np.zeros((1, N), np.float32)
    launch(layer_norm_bwd_dwdb, flavour, (1,), dw_part, db_part, dw, db, GROUP=GROUP, BN=BN)
    assert (lock == 0).all() and (count == 1).all()
    # the reference in f64 from the same f32 mean and rstd
    x64, dy64, w64 = x.astype(np.float64), dy.astype(np.float64), w.astype(np.float64)
    xhat = (x64 - mean) * rstd
    wdy = w64 * dy64
    c1, c2 = (xhat * wdy).mean(1, keepdims=True), wdy.mean(1, keepdims=True)
    ref_dx = (wdy - (xhat * c1 + c2)) * rstd
    # xhat and wdy carry 2 and 1 roundings; c1, c2 sums of N terms add (N + 2) u of the sum
    # of magnitudes; dx then 4 more roundings of its terms
    s1, s2 = np.abs(xhat * wdy).mean(1, keepdims=True), np.abs(wdy).mean(1, keepdims=True)
    err_c1, err_c2 = (N + 5) * U * s1, (N + 3) * U * s2
    bound_dx = rstd * (np.abs(xhat) * err_c1 + err_c2 + 6 * U * (np.abs(wdy) + np.abs(xhat * c1) + np.abs(c2)))
    assert np.all(np.abs(dx - ref_dx) <= bound_dx + U * np.abs(ref_dx))
    # dW, dB: sums of M terms (each dy * xhat: 3 roundings) in an order the locks pick, then
    # GROUP partial rows summed: (M + GROUP + 3) u of the sum of magnitudes
    bound_dw = (M + GROUP + 3) * U * np.abs(dy64 * xhat).sum(0)
    bound_db = (M + GROUP) * U * np.abs(dy64).sum(0)
    assert np.all(np.abs(dw[0] - (dy64 * xhat).sum(0)) <= bound_dw)
    assert np.all(np.abs(db[0] - dy64.sum(0)) <= bound_db)
