"""Lowering gaps closed (load padding, stores to transposed tiles, block-atomic
old values, element-wise ops on tile_mma operands), on the CPU device in both flavours
(cpu-pvc: 16 lanes with 2D block messages; cpu-arc: 8 lanes, per-lane accesses) against
numpy and the XeTile interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

FLAVOURS = ["pvc", "arc"]


# --- load_tile(..., padding=v) -----------------------------------------------------------------
@xd.jit
def pad_copy(x, y, BM: xt.constexpr, BN: xt.constexpr, PAD: xt.constexpr):
    """Copy BM x BN tiles of ``x`` into ``y`` (which is larger): elements outside ``x`` read PAD."""
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    v = xt.load_tile(xt.init_tile(x, [m, n], [BM, BN]), padding=PAD)
    xt.store_tile(v, xt.init_tile(y, [m, n], [BM, BN]))


@xd.jit
def pad_rowmax(x, y, BN: xt.constexpr):
    """Row maxima of a 16 x BN window of ``x`` padded with -inf (a reduction sees the padding)."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [16, BN]), padding=float("-inf"))
    xt.store_tile(xt.max(v, axis=1), xt.init_tile(y, [0, 0], [16, 1]))


@xd.jit
def pad_matmul(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """A GEMM whose K is not a multiple of BK, with both operands padded with 1: every
    out-of-bounds k adds 1 * 1 to each element of C."""
    ta = xt.init_tile(a, [xt.program_id(0) * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, xt.program_id(1) * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta, padding=1.0), xt.load_tile(tb, padding=1.0), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [xt.program_id(0) * BM, xt.program_id(1) * BN], [BM, BN]))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int8])
def test_padding_fills_out_of_bounds(flavour, dtype):
    BN = 32 if np.dtype(dtype).itemsize > 1 else 64  # PVC's 2D blocks need rows of >= 64 bytes
    cols = BN + 8
    x = (np.arange(20 * cols) % 97).reshape(20, cols).astype(dtype)
    y = np.zeros((32, 2 * BN), dtype)
    pad = -7.5 if np.issubdtype(dtype, np.floating) else -7
    pad_copy.on(f"cpu-{flavour}")[(2, 2)](x, y, BM=16, BN=BN, PAD=pad)
    ref = np.full(y.shape, pad, dtype)
    ref[:20, :cols] = x
    np.testing.assert_array_equal(y, ref)
    interp = np.zeros_like(y)
    pad_copy.on("interpret")[(2, 2)](x, interp, BM=16, BN=BN, PAD=pad)
    np.testing.assert_array_equal(y, interp)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_padding_reaches_a_reduction(flavour):
    """Columns beyond x's width are -inf, so all-negative rows keep their own maximum."""
    x = -np.abs(np.random.default_rng(3).standard_normal((16, 24))).astype(np.float32) - 1
    y = np.zeros((16, 1), np.float32)
    pad_rowmax.on(f"cpu-{flavour}")[(1,)](x, y, BN=32)
    np.testing.assert_array_equal(y[:, 0], x.max(axis=1))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_padding_of_mma_operands_with_out_of_bounds_k(flavour):
    M, N, K, BK = 48, 40, 40, 32  # K = 40: the second K step has 24 padded columns/rows
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    BM, BN = (32, 32) if flavour == "pvc" else (16, 16)
    pad_matmul.on(f"cpu-{flavour}")[((M + BM - 1) // BM, (N + BN - 1) // BN)](a, b, c, K, BM=BM, BN=BN, BK=BK)
    padded_k = -K % BK
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32) + padded_k)


# --- the launcher checks 2D-block limits only on arrays that see 2D block messages ------------
@xd.jit
def scatter_into_narrow(src, idx, out, N: xt.constexpr):
    """out.flat[idx[0, j]] = src[0, j]: ``out`` is reached only through a scattered tile."""
    v = xt.load_tile(xt.init_tile(src, [0, 0], [1, N]))
    i = xt.load_tile(xt.init_tile(idx, [0, 0], [1, N]))
    xt.store_scatter(v, xt.init_tile(out, i), i >= 0)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_scattered_only_array_may_be_narrow(flavour):
    """A 4 x 4 f32 array (16-byte rows, narrower than PVC's 64-byte 2D-block minimum)."""
    rng = np.random.default_rng(11)
    src = rng.standard_normal((1, 16)).astype(np.float32)
    idx = rng.permutation(16).astype(np.int32).reshape(1, 16)
    out = np.zeros((4, 4), np.float32)
    scatter_into_narrow.on(f"cpu-{flavour}")[(1,)](src, idx, out, N=16)
    ref = np.zeros(16, np.float32)
    ref[idx[0]] = src[0]
    np.testing.assert_array_equal(out.reshape(-1), ref)


def test_abi_marks_only_block_accessed_arrays():
    sig = {"src": "f32[:,:]", "idx": "i32[:,:]", "out": "f32[:,:]"}
    abi = xd.compile(scatter_into_narrow, sig, {"N": 16}, target="pvc").abi
    # src and idx: one-row 2D block reads; out: only the scatter
    assert [p.block2d for p in abi.params if p.kind == "array"] == [True, True, False]
    copy_sig = {"x": "f32[:,:]", "y": "f32[:,:]"}
    abi = xd.compile(pad_copy, copy_sig, {"BM": 16, "BN": 32, "PAD": 1.0}, target="pvc").abi
    assert [p.block2d for p in abi.params if p.kind == "array"] == [True, True]
    arc = xd.compile(pad_copy, copy_sig, {"BM": 16, "BN": 32, "PAD": 1.0}, target="arc").abi
    assert [p.block2d for p in arc.params if p.kind == "array"] == [False, False]


def test_block_accessed_array_with_narrow_rows_is_read_per_lane():
    """32-byte rows under a 2D block load used to be refused at launch ("at least 64
    bytes"); the kernel is now specialised to read that array per lane,
    with the padding where the tile leaves the array."""
    x = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    y = np.zeros((16, 32), np.float32)
    pad_copy.on("cpu-pvc")[(1, 1)](x, y, BM=16, BN=32, PAD=1.0)
    want = np.ones((16, 32), np.float32)
    want[:, :8] = x
    np.testing.assert_array_equal(y, want)


# --- store_tile to order=[0, 1] tiles ------------------------------------------------------------
@xd.jit
def store_transposed(x, y, BM: xt.constexpr, BN: xt.constexpr):
    """y = 2 * x^T through a transposed view of y (a column-major tile)."""
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    v = xt.load_tile(xt.init_tile(x, [m, n], [BM, BN]))
    xt.store_tile(v * 2, xt.init_tile(y, [m, n], [BM, BN], order=(0, 1)))


@xd.jit
def gemm_store_ct(a, b, ct, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """C^T stored through an order=(0, 1) tile of ``ct`` (N x M), C = A @ B."""
    ta = xt.init_tile(a, [xt.program_id(0) * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, xt.program_id(1) * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(ct, [xt.program_id(0) * BM, xt.program_id(1) * BN], [BM, BN], order=(0, 1)))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_store_to_transposed_tile(flavour, dtype):
    """40 x 48 (not multiples of the 16 x 32 tile): out-of-bounds elements are not written."""
    x = (np.arange(40 * 48) % 251).reshape(40, 48).astype(dtype)
    y = np.full((48, 40), 3, dtype)
    store_transposed.on(f"cpu-{flavour}")[(3, 2)](x, y, BM=16, BN=32)
    np.testing.assert_array_equal(y, (2 * x).T)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_gemm_result_stored_transposed(flavour):
    M, N, K = 48, 40, 64
    rng = np.random.default_rng(9)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    ct = np.zeros((N, M), np.float32)
    BM, BN = (32, 32) if flavour == "pvc" else (16, 16)
    gemm_store_ct.on(f"cpu-{flavour}")[(-(-M // BM), -(-N // BN))](a, b, ct, K, BM=BM, BN=BN, BK=32)
    np.testing.assert_array_equal(ct, (a.astype(np.float32) @ b.astype(np.float32)).T)


# --- the old values of atomic_rmw on a block tile -----------------------------------------------
@xd.jit
def atomic_old_values(x, out, old, KIND: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr):
    """out <KIND>= x block by block; ``old`` receives what each element held before."""
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    v = xt.load_tile(xt.init_tile(x, [m, n], [BM, BN]))
    o = xt.atomic_rmw(KIND, v, xt.init_tile(out, [m, n], [BM, BN]))
    xt.store_tile(o, xt.init_tile(old, [m, n], [BM, BN]))


@xd.jit
def atomic_ticket(counter, got, R: xt.constexpr, BN: xt.constexpr):
    """Every workgroup adds 1 to each element of ``counter`` and keeps the value it saw
    (its ticket) in its own slab of ``got``: per element the tickets are a permutation."""
    g = xt.program_id(0)
    ones = xt.full([R, BN], 1, xt.int32)
    o = xt.atomic_rmw("addi", ones, xt.init_tile(counter, [0, 0], [R, BN]))
    xt.store_tile(o, xt.init_tile(got, [g * R, 0], [R, BN]))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("kind,dtype", [("addf", np.float32), ("maximumf", np.float32), ("addi", np.int32),
                                        ("assign", np.int32)])
def test_block_atomic_returns_old_values(flavour, kind, dtype):
    rng = np.random.default_rng(13)
    x = rng.integers(-50, 50, (40, 48)).astype(dtype)
    start = rng.integers(-50, 50, (40, 48)).astype(dtype)
    out, old = start.copy(), np.zeros((48, 64), dtype)
    atomic_old_values.on(f"cpu-{flavour}")[(3, 2)](x, out, old, KIND=kind, BM=16, BN=32)
    combine = {"addf": np.add, "addi": np.add, "maximumf": np.maximum, "assign": lambda s, v: v}[kind]
    np.testing.assert_array_equal(out, combine(start, x))
    np.testing.assert_array_equal(old[:40, :48], start)
    assert not old[40:].any() and not old[:, 48:].any()  # outside `out`: no atomic, nothing stored


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_block_atomic_old_values_are_distinct_tickets(flavour):
    G, R, BN = 6, 8, 32
    counter = np.zeros((R, BN), np.int32)
    got = np.full((G * R, BN), -1, np.int32)
    atomic_ticket.on(f"cpu-{flavour}")[(G,)](counter, got, R=R, BN=BN)
    np.testing.assert_array_equal(counter, G)
    tickets = np.sort(got.reshape(G, R, BN), axis=0)
    np.testing.assert_array_equal(tickets, np.broadcast_to(np.arange(G)[:, None, None], (G, R, BN)))


# --- element-wise ops on tile_mma operands ------------------------------------------------------
@xd.jit
def mma_of_elementwise(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, WHICH: xt.constexpr,
                       ACC: xt.constexpr, IN: xt.constexpr):
    """C = op(A) @ B or A @ op(B): WHICH 0: 2*A, 1: relu(B), 2: B.astype(IN), 3: A.astype(IN),
    4: where(A > 0, A, -A) (|A|) and B - 1 together."""
    ta = xt.init_tile(a, [xt.program_id(0) * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, xt.program_id(1) * BN], [BK, BN])
    acc = xt.zeros([BM, BN], ACC)
    for k in range(0, K, BK):
        va = xt.load_tile(ta)
        vb = xt.load_tile(tb)
        if WHICH == 0:
            acc = xt.tile_mma(va * 2, vb, acc)
        elif WHICH == 1:
            acc = xt.tile_mma(va, xt.maximum(vb, 0), acc)
        elif WHICH == 2:
            acc = xt.tile_mma(va, xt.astype(vb, IN), acc)
        elif WHICH == 3:
            acc = xt.tile_mma(xt.astype(va, IN), vb, acc)
        else:
            acc = xt.tile_mma(xt.where(va > 0, va, -va), vb - 1, acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [xt.program_id(0) * BM, xt.program_id(1) * BN], [BM, BN]))


def _mma_reference(which, a, b):
    A, B = a.astype(np.float64), b.astype(np.float64)
    return [(2 * A) @ B, A @ np.maximum(B, 0), A @ B, A @ B, np.abs(A) @ (B - 1)][which]


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("which", [0, 1, 2, 3, 4], ids=["2a", "relu_b", "astype_b", "astype_a", "abs_a_bm1"])
def test_elementwise_on_f16_mma_operands(flavour, which):
    """Operands built from small integers: every product and sum is exact in f16/f32."""
    M, N, K = 64, 48, 64
    rng = np.random.default_rng(17 + which)
    a = rng.integers(-3, 4, (M, K)).astype(np.float32 if which == 3 else np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float32 if which == 2 else np.float16)
    c = np.zeros((M, N), np.float32)
    BM, BN = (32, 16) if flavour == "pvc" else (16, 16)
    mma_of_elementwise.on(f"cpu-{flavour}")[(M // BM, N // BN)](a, b, c, K, BM=BM, BN=BN, BK=32, WHICH=which,
                                                                 ACC=xt.float32, IN=xt.float16)
    np.testing.assert_array_equal(c, _mma_reference(which, a, b))


def test_elementwise_on_int8_operand_a_pvc():
    """8-bit A has a packed lane layout on PVC (pairs); the chain takes it back to its load."""
    M, N, K = 32, 64, 64  # 64-byte rows of int8 for PVC's 2D blocks
    rng = np.random.default_rng(23)
    a = rng.integers(-20, 20, (M, K)).astype(np.int8)
    b = rng.integers(-20, 20, (K, N)).astype(np.int8)
    c = np.zeros((M, N), np.int32)
    mma_of_elementwise.on("cpu-pvc")[(1, 2)](a, b, c, K, BM=32, BN=32, BK=64, WHICH=0, ACC=xt.int32, IN=xt.int8)
    np.testing.assert_array_equal(c, (2 * a.astype(np.int64)) @ b.astype(np.int64))


def test_elementwise_on_tf32_operand_a():
    """tf32 A has the RFC's [2, 8] lane layout on PVC; the chain takes it back to its load."""
    M, N, K = 32, 32, 32
    rng = np.random.default_rng(29)
    a = rng.integers(-3, 4, (M, K)).astype(np.float32)
    b = rng.integers(-3, 4, (K, N)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    mma_of_elementwise.on("cpu-pvc")[(1, 1)](a, b, c, K, BM=32, BN=32, BK=16, WHICH=0, ACC=xt.float32, IN=xt.float32)
    np.testing.assert_array_equal(c, _mma_reference(0, a, b))


@xd.jit
def operand_also_stored(a, b, c, d):
    va = xt.load_tile(xt.init_tile(a, [0, 0], [16, 32])) * 2
    xt.store_tile(va, xt.init_tile(d, [0, 0], [16, 32]))
    acc = xt.tile_mma(va, xt.load_tile(xt.init_tile(b, [0, 0], [32, 16])), xt.zeros([16, 16], xt.float32))
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [16, 16]))


def test_operand_a_value_with_a_second_layout_is_a_located_error():
    """On ARC 16-bit A is dword-packed: a value both fed to A and stored needs two layouts."""
    sig = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "d": "f16[:,:]"}
    with pytest.raises(xd.CompilationError, match=r"operand A of tile_mma is also used by xegpu.store_nd") as err:
        xd.compile(operand_also_stored, sig, {}, target="arc")
    assert "test_lowering_gaps.py" in str(err.value)
    xd.compile(operand_also_stored, sig, {}, target="pvc")  # one layout on PVC: fine


@pytest.mark.parametrize("target,which", [("arc", 0), ("pvc", 1)], ids=["arc_a", "pvc_b"])
def test_elementwise_on_32_int8_per_lane_is_a_located_error(target, which):
    """int8 operand blocks of 32 elements per lane (A and B on ARC, B on PVC) are more than
    a SPIR-V vector holds."""
    sig = {"a": "i8[:,:]", "b": "i8[:,:]", "c": "i32[:,:]", "K": "i32"}
    consts = {"BM": 16, "BN": 16, "BK": 64, "WHICH": which, "ACC": xt.int32, "IN": xt.int8}
    with pytest.raises(xd.CompilationError, match="32 i8 elements per lane .* not lowered yet") as err:
        xd.compile(mma_of_elementwise, sig, consts, target=target)
    assert "test_lowering_gaps.py" in str(err.value)


# --- scattered tiles of several rows ------------------------------------------------------------
@xd.jit
def gather_rows(src, idx, out, R: xt.constexpr, C: xt.constexpr):
    """out = 2 * src.flat[idx] where idx < 50 (else 0), over an R x C offsets tile."""
    i = xt.load_tile(xt.init_tile(idx, [0, 0], [R, C]))
    v = xt.load_gather(xt.init_tile(src, i), i < 50)
    xt.store_tile(v * 2, xt.init_tile(out, [0, 0], [R, C]))


@xd.jit
def scatter_rows(src, idx, out, R: xt.constexpr, C: xt.constexpr):
    """out.flat[idx] = src where idx is odd."""
    i = xt.load_tile(xt.init_tile(idx, [0, 0], [R, C]))
    xt.store_scatter(xt.load_tile(xt.init_tile(src, [0, 0], [R, C])), xt.init_tile(out, i), i % 2 == 1)


@xd.jit
def histogram_rows(idx, hist, R: xt.constexpr, C: xt.constexpr):
    """hist.flat[idx] += 1 for an R x C tile of bin numbers; old counts come back."""
    i = xt.load_tile(xt.init_tile(idx, [0, 0], [R, C]))
    xt.atomic_rmw("addi", xt.full([R, C], 1, xt.int32), xt.init_tile(hist, i))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_gather_from_a_several_row_scattered_tile(flavour):
    rng = np.random.default_rng(31)
    src = rng.standard_normal((8, 8)).astype(np.float32)
    idx = rng.integers(0, 64, (4, 32)).astype(np.int32)
    out = np.zeros((4, 32), np.float32)
    gather_rows.on(f"cpu-{flavour}")[(1,)](src, idx, out, R=4, C=32)
    np.testing.assert_array_equal(out, np.where(idx < 50, src.reshape(-1)[idx], 0) * 2)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_scatter_and_atomics_through_several_row_scattered_tiles(flavour):
    rng = np.random.default_rng(37)
    idx = rng.permutation(256).astype(np.int32).reshape(8, 32)
    src = rng.standard_normal((8, 32)).astype(np.float32)
    out = np.full((16, 16), -1, np.float32)
    scatter_rows.on(f"cpu-{flavour}")[(1,)](src, idx, out, R=8, C=32)
    ref = np.full(256, -1, np.float32)
    odd = idx % 2 == 1
    ref[idx[odd]] = src[odd]
    np.testing.assert_array_equal(out.reshape(-1), ref)
    bins = rng.integers(0, 20, (3, 16)).astype(np.int32)
    hist = np.zeros((4, 8), np.int32)
    histogram_rows.on(f"cpu-{flavour}")[(1,)](bins, hist, R=3, C=16)
    np.testing.assert_array_equal(hist.reshape(-1), np.bincount(bins.reshape(-1), minlength=32))
