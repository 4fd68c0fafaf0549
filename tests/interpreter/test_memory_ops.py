"""Memory semantics of the interpreter (the XeTile RFC) on hand-written MLIR:
out-of-bounds padding and dropped stores, the i64-address and column-major forms,
atomics, gather/scatter with masks."""
from __future__ import annotations

import numpy as np
import pytest

from xetile_dsl.interpreter import InterpreterError

from .mlir import kernel, memref, run, tile

SC = "#xetile.tile_attr<scattered = true>"


def copy_kernel(elem: str, shape: str, padding: str = "", row: str = "%c0", col: str = "%c0") -> str:
    pad = f" {{padding = {padding} : {elem}}}" if padding else ""
    body = f"""
  %t = {tile("x", elem, shape, row, col)}
  %v = xetile.load_tile %t{pad} : !xetile.tile<{shape}x{elem}> -> vector<{shape}x{elem}>
  %o = {tile("y", elem, shape, row, col)}
  xetile.store_tile %v, %o : vector<{shape}x{elem}>, !xetile.tile<{shape}x{elem}>"""
    return kernel({"x": elem, "y": elem}, body)


@pytest.mark.parametrize("elem,dtype,pad", [("f32", np.float32, "-2.5"), ("i32", np.int32, "7"),
                                            ("f16", np.float16, "1.0")])
def test_out_of_bounds_loads_read_the_padding_value(elem, dtype, pad):
    """x is 5x6; an 8x8 tile reads padding outside it, and y (8x8) receives all of it."""
    x = np.arange(30).reshape(5, 6).astype(dtype)
    text = kernel({"x": elem, "y": elem}, f"""
  %t = {tile("x", elem, "8x8")}
  %v = xetile.load_tile %t {{padding = {pad} : {elem}}} : !xetile.tile<8x8x{elem}> -> vector<8x8x{elem}>
  %o = {tile("y", elem, "8x8")}
  xetile.store_tile %v, %o : vector<8x8x{elem}>, !xetile.tile<8x8x{elem}>""")
    y = np.zeros((8, 8), dtype)
    run(text, (1,), x, y)
    want = np.full((8, 8), float(pad)).astype(dtype)
    want[:5, :6] = x
    np.testing.assert_array_equal(y, want)


def test_default_padding_is_zero_and_out_of_bounds_stores_are_dropped():
    """A 4x4 tile at (-2, 3) straddles the top and right edges of a 6x5 array."""
    x = np.arange(1, 31, dtype=np.float32).reshape(6, 5)
    y = np.full((6, 5), -1, np.float32)
    neg2 = "%m2"
    text = copy_kernel("f32", "4x4", row=neg2, col="%c3").replace(
        "  %c1 = arith.constant 1 : index", "  %c1 = arith.constant 1 : index\n  %m2 = arith.constant -2 : index\n"
        "  %c3 = arith.constant 3 : index")
    run(text, (1,), x, y)
    want = np.full((6, 5), -1, np.float32)
    want[0:2, 3:5] = x[0:2, 3:5]
    np.testing.assert_array_equal(y, want)


def test_update_tile_offset_walks_a_tile_across_the_array():
    """Sum the 8x8 column blocks of a 8x40 array (the last one half outside) with scf.for."""
    x = np.arange(8 * 36, dtype=np.float32).reshape(8, 36)
    y = np.zeros((8, 8), np.float32)
    text = kernel({"x": "f32", "y": "f32"}, f"""
  %t0 = {tile("x", "f32", "8x8")}
  %z = arith.constant dense<0.0> : vector<8x8xf32>
  %c8 = arith.constant 8 : index
  %c40 = arith.constant 40 : index
  %acc, %t = scf.for %k = %c0 to %c40 step %c8 iter_args(%a = %z, %ti = %t0) -> (vector<8x8xf32>, !xetile.tile<8x8xf32>) {{
    %v = xetile.load_tile %ti : !xetile.tile<8x8xf32> -> vector<8x8xf32>
    %s = arith.addf %a, %v : vector<8x8xf32>
    %tn = xetile.update_tile_offset %ti, %c0, %c8 : !xetile.tile<8x8xf32>
    scf.yield %s, %tn : vector<8x8xf32>, !xetile.tile<8x8xf32>
  }}
  %o = {tile("y", "f32", "8x8")}
  xetile.store_tile %acc, %o : vector<8x8xf32>, !xetile.tile<8x8xf32>""")
    run(text, (1,), x, y)
    padded = np.zeros((8, 40), np.float32)
    padded[:, :36] = x
    np.testing.assert_array_equal(y, padded.reshape(8, 5, 8).sum(axis=1))


def test_i64_address_form_and_column_major_view():
    """init_tile on a raw address: bt (N x K, row-major) seen as K x N with strides
    [1, K] and order [0, 1] (the RFC's Appendix 1), copied into b (K x N)."""
    K, N = 16, 24
    bt = np.arange(N * K, dtype=np.float16).reshape(N, K)
    b = np.zeros((K, N), np.float16)
    col = "#xetile.tile_attr<order = [0, 1]>"
    text = kernel({"bt": "f16", "b": "f16"}, f"""
  %p = "memref.extract_aligned_pointer_as_index"(%bt) : ({memref("f16")}) -> index
  %addr = arith.index_cast %p : index to i64
  %t = xetile.init_tile %addr[%c0, %c0], [%bt_cols, %bt_rows], [%c1, %bt_stride] : i64 -> !xetile.tile<16x24xf16, {col}>
  %v = xetile.load_tile %t : !xetile.tile<16x24xf16, {col}> -> vector<16x24xf16>
  %o = {tile("b", "f16", "16x24")}
  xetile.store_tile %v, %o : vector<16x24xf16>, !xetile.tile<16x24xf16>""")
    run(text, (1,), bt, b)
    np.testing.assert_array_equal(b, bt.T)


def atomic_kernel(kind: str, elem: str) -> str:
    """Every program atomically combines its 8x16 tile of x into y (16x16) at (0, 0)
    and writes the old values it saw into its own rows of old (8*programs x 16)."""
    return kernel({"x": elem, "y": elem, "old": elem}, f"""
  %pid = "gpu.block_id"() <{{dimension = #gpu<dim x>}}> : () -> index
  %c8 = arith.constant 8 : index
  %row = arith.muli %pid, %c8 : index
  %t = {tile("x", elem, "8x16", "%row")}
  %v = xetile.load_tile %t : !xetile.tile<8x16x{elem}> -> vector<8x16x{elem}>
  %dst = {tile("y", elem, "8x16")}
  %r = xetile.atomic_rmw {kind} %v, %dst : vector<8x16x{elem}>, !xetile.tile<8x16x{elem}> -> vector<8x16x{elem}>
  %o = {tile("old", elem, "8x16", "%row")}
  xetile.store_tile %r, %o : vector<8x16x{elem}>, !xetile.tile<8x16x{elem}>""")


def test_atomic_add_accumulates_over_programs_and_returns_old_values():
    programs = 6
    rng = np.random.default_rng(1)
    x = rng.integers(-5, 6, (8 * programs, 16)).astype(np.float32)
    y = np.ones((16, 16), np.float32)
    old = np.zeros_like(x)
    run(atomic_kernel("addf", "f32"), (programs,), x, y, old)
    blocks = x.reshape(programs, 8, 16)
    np.testing.assert_array_equal(y[:8], 1 + blocks.sum(axis=0))
    np.testing.assert_array_equal(y[8:], 1)                       # untouched rows
    np.testing.assert_array_equal(old.reshape(programs, 8, 16), 1 + np.cumsum(blocks, axis=0) - blocks)


@pytest.mark.parametrize("kind,elem,fn", [("maxs", "i32", np.maximum), ("mins", "i32", np.minimum),
                                          ("addi", "i32", np.add), ("maximumf", "f32", np.maximum),
                                          ("assign", "f32", lambda a, b: b)])
def test_atomic_kinds(kind, elem, fn):
    rng = np.random.default_rng(2)
    dtype = np.int32 if elem == "i32" else np.float32
    x = rng.integers(-100, 100, (16, 16)).astype(dtype)
    y = rng.integers(-100, 100, (16, 16)).astype(dtype)
    start = y.copy()
    run(atomic_kernel(kind, elem), (2,), x, y, np.zeros_like(x))
    np.testing.assert_array_equal(y[:8], fn(fn(start[:8], x[:8]), x[8:]))


def test_atomic_add_on_aliasing_elements_is_sequential():
    """A scattered tile whose 16 offsets hit 4 addresses: every add counts."""
    y = np.zeros((1, 4), np.float32)
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 16)
    text = kernel({"x": "f32", "y": "f32"}, f"""
  %offs = arith.constant dense<[[0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]]> : vector<1x16xindex>
  %p = "memref.extract_aligned_pointer_as_index"(%y) : ({memref("f32")}) -> index
  %addr = arith.index_cast %p : index to i64
  %dst = xetile.init_tile %addr, %offs : i64, vector<1x16xindex> -> !xetile.tile<1x16xf32, {SC}>
  %t = {tile("x", "f32", "1x16")}
  %v = xetile.load_tile %t : !xetile.tile<1x16xf32> -> vector<1x16xf32>
  %r = xetile.atomic_rmw addf %v, %dst : vector<1x16xf32>, !xetile.tile<1x16xf32, {SC}> -> vector<1x16xf32>""")
    run(text, (1,), x, y)
    np.testing.assert_array_equal(y[0], x.reshape(4, 4).sum(axis=0))


def test_gather_and_scatter_with_masks():
    """Gather x[perm] with every third lane masked off (padding 9), scatter to y at
    reversed positions with odd lanes masked off."""
    n = 16
    x = np.arange(100, 100 + 32, dtype=np.float32).reshape(1, 32)
    y = np.full((1, 32), -1, np.float32)
    perm = np.array([5, 31, 0, 7, 7, 12, 30, 2, 9, 16, 3, 8, 4, 25, 1, 6])
    gmask = np.arange(n) % 3 != 0
    smask = np.arange(n) % 2 == 0
    dest = np.arange(n)[::-1] * 2

    def vec(values, elem):
        return "dense<[[" + ", ".join(str(v).lower() for v in values) + f"]]> : vector<1x{n}x{elem}>"

    text = kernel({"x": "f32", "y": "f32"}, f"""
  %px = "memref.extract_aligned_pointer_as_index"(%x) : ({memref("f32")}) -> index
  %ax = arith.index_cast %px : index to i64
  %py = "memref.extract_aligned_pointer_as_index"(%y) : ({memref("f32")}) -> index
  %ay = arith.index_cast %py : index to i64
  %go = arith.constant {vec(perm, "index")}
  %gm = arith.constant {vec(gmask, "i1")}
  %so = arith.constant {vec(dest, "index")}
  %sm = arith.constant {vec(smask, "i1")}
  %tx = xetile.init_tile %ax, %go : i64, vector<1x16xindex> -> !xetile.tile<1x16xf32, {SC}>
  %v = xetile.load_gather %tx, %gm {{padding = 9.0 : f32}} : !xetile.tile<1x16xf32, {SC}>, vector<1x16xi1> -> vector<1x16xf32>
  %ty = xetile.init_tile %ay, %so : i64, vector<1x16xindex> -> !xetile.tile<1x16xf32, {SC}>
  xetile.store_scatter %v, %ty, %sm : vector<1x16xf32>, !xetile.tile<1x16xf32, {SC}>, vector<1x16xi1>""")
    run(text, (1,), x, y)
    gathered = np.where(gmask, x[0, perm], 9.0)
    want = np.full(32, -1, np.float32)
    want[dest[smask]] = gathered[smask]
    np.testing.assert_array_equal(y[0], want)


def test_tile_whose_bounds_exceed_its_array_is_an_error():
    """sizes that lie about the array: an in-bounds element outside the allocation."""
    x = np.zeros((4, 4), np.float32)
    text = kernel({"x": "f32"}, """
  %c64 = arith.constant 64 : index
  %t = xetile.init_tile %x[%c0, %c0], [%c64, %c64], [%x_stride, %c1] : memref<?x?xf32, strided<[?, 1]>> -> !xetile.tile<8x8xf32>
  %v = xetile.load_tile %t : !xetile.tile<8x8xf32> -> vector<8x8xf32>""")
    with pytest.raises(InterpreterError, match="outside the array"):
        run(text, (1,), x)
