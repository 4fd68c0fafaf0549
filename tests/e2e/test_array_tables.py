"""Array tables end to end (cpu-pvc, cpu-arc, interpreter) against numpy: a grouped GEMM
over matrices of different shapes, none a multiple of the tiles, in one launch with the
sizes read from ``tab[g].shape``; numpy entries written back, dpnp entries used in place;
located errors for a table entry used as anything but a tile base or ``.shape``."""
from __future__ import annotations

import pathlib
import runpy

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from conftest_tools import require_dpnp, require_module
from xetile_dsl.frontend.argspec import ArgSpec

TARGETS = ["cpu", "cpu-arc", "interpret"]
#: (M, N, K) per group: no extent a multiple of the 16x16x16 tiles; rows >= 64 bytes
SHAPES = [(40, 48, 33), (17, 32, 50), (33, 40, 32), (24, 56, 47)]


@xd.jit
def grouped_gemm(a, b, c, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """Program (t, g) computes C tile t of group g: C[g] = A[g] @ B[g], the sizes from the tables."""
    g = xt.program_id(1)
    m, k, n = a[g].shape[0], a[g].shape[1], b[g].shape[1]
    tiles_n = (n + BN - 1) // BN
    t = xt.program_id(0)
    row, col = (t // tiles_n) * BM, (t % tiles_n) * BN
    if row < m:
        ta = xt.init_tile(a[g], [row, 0], [BM, BK])
        tb = xt.init_tile(b[g], [0, col], [BK, BN])
        acc = xt.zeros([BM, BN], xt.float32)
        for _ in range(0, k, BK):
            acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
            ta = xt.update_tile_offset(ta, 0, BK)
            tb = xt.update_tile_offset(tb, BK, 0)
        xt.store_tile(acc, xt.init_tile(c[g], [row, col], [BM, BN]))


@pytest.mark.parametrize("target", TARGETS)
def test_grouped_gemm_of_different_shapes_in_one_launch(target):
    rng = np.random.default_rng(27)
    a = [rng.integers(-3, 4, (m, k)).astype(np.float16) for m, n, k in SHAPES]
    b = [rng.integers(-3, 4, (k, n)).astype(np.float16) for m, n, k in SHAPES]
    c = [np.full((m, n), np.nan, np.float32) for m, n, k in SHAPES]
    tiles = max(-(-m // 16) * -(-n // 16) for m, n, k in SHAPES)
    grouped_gemm.on(target)[(tiles, len(SHAPES))](xd.array_table(a), xd.array_table(b), xd.array_table(c),
                                                  BM=16, BN=16, BK=16)
    for x, y, z in zip(a, b, c):
        # small integers: every product and sum (|.| <= 9 * 50) is exact in f16 x f16 -> f32
        np.testing.assert_array_equal(z, x.astype(np.float32) @ y.astype(np.float32))


#: (M, N, K) per group for dpnp entries, used in place: rows of a multiple of 16 bytes
#: (the 2D block pitch rule), still no extent a multiple of the 16x16x16 tiles
USM_SHAPES = [(40, 56, 40), (17, 40, 56), (24, 56, 72)]


@pytest.mark.parametrize("target", ["cpu", "interpret"])
def test_grouped_gemm_of_dpnp_entries_in_place(target):
    """dpnp entries on the OpenCL CPU device's queue: the kernel reads and writes them
    through their own USM pointers and strides (one a padded view into a larger array,
    whose other elements stay as they were); the outputs are the dpnp arrays."""
    dpctl, dpnp = require_module("dpctl"), require_dpnp()
    queue = dpctl.SyclQueue("opencl:cpu")
    rng = np.random.default_rng(46)
    a = [rng.integers(-3, 4, (m, k)).astype(np.float16) for m, n, k in USM_SHAPES]
    b = [rng.integers(-3, 4, (k, n)).astype(np.float16) for m, n, k in USM_SHAPES]
    da, db = ([dpnp.asarray(x, sycl_queue=queue) for x in xs] for xs in (a, b))
    wide = dpnp.full((20, 64), -7, dtype=np.float32, sycl_queue=queue)     # C[1] lives at wide[2:19, :40]
    dc = [dpnp.full((m, n), np.nan, dtype=np.float32, sycl_queue=queue) for m, n, k in USM_SHAPES]
    dc[1] = wide[2:19, :40]
    tiles = max(-(-m // 16) * -(-n // 16) for m, n, k in USM_SHAPES)
    grouped_gemm.on(target)[(tiles, len(USM_SHAPES))](xd.array_table(da), xd.array_table(db), xd.array_table(dc),
                                                      BM=16, BN=16, BK=16)
    for x, y, z in zip(a, b, dc):
        # small integers: every product and sum (|.| <= 9 * 72) is exact in f16 x f16 -> f32
        np.testing.assert_array_equal(dpnp.asnumpy(z), x.astype(np.float32) @ y.astype(np.float32))
    outside = dpnp.asnumpy(wide)
    outside[2:19, :40] = -7
    np.testing.assert_array_equal(outside, np.full((20, 64), -7, np.float32))


@xd.jit
def add_one(tab, BM: xt.constexpr, BN: xt.constexpr):
    g = xt.program_id(1)
    r = xt.program_id(0) * BM
    if r < tab[g].shape[0]:
        for col in range(0, tab[g].shape[1], BN):
            t = xt.init_tile(tab[g], [r, col], [BM, BN])
            xt.store_tile(xt.load_tile(t) + 1.0, t)


@pytest.mark.parametrize("target", TARGETS)
def test_numpy_entries_are_written_back(target):
    base = np.arange(64 * 48, dtype=np.float32).reshape(64, 48)
    entries = [np.arange(20 * 24, dtype=np.float32).reshape(20, 24), base[3:40, :37], np.zeros((9, 16), np.float32)]
    before = [e.copy() for e in entries]
    add_one.on(target)[(3, 3)](xd.array_table(entries), BM=16, BN=16)
    for e, old in zip(entries, before):
        np.testing.assert_array_equal(e, old + 1)   # exact: small integers + 1 in f32
    np.testing.assert_array_equal(base[:3], np.arange(3 * 48, dtype=np.float32).reshape(3, 48))   # outside the view


@xd.jit
def entry_as_value(tab, BM: xt.constexpr):
    x = tab[0] + 1
    xt.store_tile(x, xt.init_tile(tab[0], [0, 0], [BM, BM]))


@xd.jit
def entry_to_load(tab, BM: xt.constexpr):
    xt.store_tile(xt.load_tile(tab[0]), xt.init_tile(tab[0], [0, 0], [BM, BM]))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kernel, line", [(entry_as_value, "x = tab[0] + 1"),
                                          (entry_to_load, "xt.load_tile(tab[0])")])
def test_entry_used_as_a_value_is_a_located_error(target, kernel, line):
    tab = xd.array_table([np.zeros((16, 16), np.float32)])
    with pytest.raises(xd.CompilationError) as err:
        kernel.on(target)[(1,)](tab, BM=16)
    text = str(err.value)
    assert "test_array_tables.py" in text and line in text and "array table entry" in text


def test_grouped_gemm_compiles_for_pvc(ocloc_path):
    """The PVC flavour builds through ocloc: the entries' tiles are 2D block messages on
    the tables' addresses, multiplied with dpas."""
    sig = {name: ArgSpec("table", dtype, 2) for name, dtype in (("a", "f16"), ("b", "f16"), ("c", "f32"))}
    compiled = xd.compile(grouped_gemm, sig, {"BM": 16, "BN": 16, "BK": 16}, target="pvc")
    isa = compiled.asm["isa"]
    assert "dpas" in isa and "load_block2d" in isa and "store_block2d" in isa


@pytest.mark.parametrize("target", TARGETS)
def test_tutorial_08_persistent_grouped_gemm(target):
    """examples/tutorial_08_grouped_gemm.py's kernel: a runtime group count, the tiles of
    every group shared out among 3 programs by a while loop per group."""
    example = runpy.run_path(str(pathlib.Path(__file__).resolve().parents[2] / "examples/tutorial_08_grouped_gemm.py"))
    rng = np.random.default_rng(8)
    a = [rng.integers(-3, 4, (m, k)).astype(np.float16) for m, n, k in SHAPES]
    b = [rng.integers(-3, 4, (k, n)).astype(np.float16) for m, n, k in SHAPES]
    c = example["grouped_matmul_host"](a, b, target, programs=3)
    for x, y, z in zip(a, b, c):
        np.testing.assert_array_equal(z, x.astype(np.float32) @ y.astype(np.float32))   # small integers: exact
