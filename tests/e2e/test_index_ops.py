"""xt.arange, argmax/argmin, ``while`` loops carrying tiles and integer reductions on the
CPU device (PVC and ARC flavours) against numpy."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
from xetile_dsl.codegen.emit import constant_vectors as codegen_constants
from kernels.index_ops import (argmax_rows_kernel, argmax_rows_wg_kernel, column_ids_kernel,
                                          column_ids_wg_kernel, halving_sums_kernel, halving_wg_kernel,
                                          int_reductions_kernel, iota_row_kernel)
import xetile_dsl.language as xt

FLAVOURS = ["pvc", "arc"]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_arange_plus_runtime_offset(flavour):
    x = np.random.default_rng(0).integers(-5, 5, (32, 64)).astype(np.float32)
    y = np.zeros_like(x)
    column_ids_kernel.on(f"cpu-{flavour}")[(2, 2)](x, y, BM=16, BN=32)
    np.testing.assert_array_equal(y, x * 1000 + np.arange(64))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_arange_stored_directly(flavour, dtype):
    """A constant stored as it is (8-bit: blocked 1 x sg like element-wise values)."""
    y = np.full((3, 64), -1, getattr(np, dtype))
    iota_row_kernel.on(f"cpu-{flavour}")[(3,)](y, BN=64, DT=getattr(xt, dtype))
    np.testing.assert_array_equal(y, np.tile(np.arange(64), (3, 1)))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_arange_from_a_constant_table(flavour, monkeypatch, tmp_path):
    """The lane-table path codegen takes for non-affine constants (loads from constant
    memory), forced here on arange (BM=8 and a fresh cache: no kernel built without
    the patch is reused)."""
    monkeypatch.setattr(codegen_constants, "_affine", lambda *args: None)
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))
    sig, consts = {"x": "f32[:,:]", "y": "f32[:,:]"}, {"BM": 8, "BN": 32}
    assert "addrspace(2) constant" in xd.compile(column_ids_kernel, sig, consts, target=f"cpu-{flavour}").asm["llvm"]
    x = np.random.default_rng(1).integers(-5, 5, (16, 32)).astype(np.float32)
    y = np.zeros_like(x)
    column_ids_kernel.on(f"cpu-{flavour}")[(2, 1)](x, y, **consts)
    np.testing.assert_array_equal(y, x * 1000 + np.arange(32))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_arange_at_workgroup_level(flavour):
    """2 x 2 subgroups: each adds its own slice of arange(0, 32)."""
    x = np.random.default_rng(2).integers(-5, 5, (32, 32)).astype(np.float32)
    y = np.zeros_like(x)
    column_ids_wg_kernel.on(f"cpu-{flavour}")[(1,)](x, y)
    np.testing.assert_array_equal(y, x * 1000 + np.arange(32))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_argmax_rows_and_argmin_columns_first_index_on_ties(flavour):
    x = np.random.default_rng(3).integers(-3, 3, (16, 32)).astype(np.float32)  # many ties
    best, worst = np.zeros((16, 16), np.int32), np.zeros((2, 32), np.int32)
    argmax_rows_kernel.on(f"cpu-{flavour}")[(2,)](x, best, worst, BM=8, BN=32)
    np.testing.assert_array_equal(best[:, 0], x.argmax(1))
    np.testing.assert_array_equal(worst, np.stack([x[:8].argmin(0), x[8:].argmin(0)]))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_argmax_at_workgroup_level(flavour):
    x = np.random.default_rng(4).standard_normal((32, 32)).astype(np.float32)
    best = np.zeros((32, 16), np.int32)
    argmax_rows_wg_kernel.on(f"cpu-{flavour}")[(1,)](x, best)
    np.testing.assert_array_equal(best[:, 0], x.argmax(1))


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("steps", [0, 1, 5])
def test_while_carrying_two_tiles(flavour, steps):
    x = np.random.default_rng(5).integers(-8, 8, (32, 32)).astype(np.float32)
    y, sums = np.zeros_like(x), np.full((32, 16), -1, np.float32)
    halving_sums_kernel.on(f"cpu-{flavour}")[(2,)](x, y, sums, steps, BM=16, BN=32)
    np.testing.assert_array_equal(y, x / 2.0 ** steps)
    np.testing.assert_array_equal(sums[:, 0], sum((x.sum(1) / 2.0 ** k for k in range(steps)), np.zeros(32)))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_while_at_workgroup_level(flavour):
    x = np.random.default_rng(7).integers(-8, 8, (32, 32)).astype(np.float32)
    y = np.zeros_like(x)
    halving_wg_kernel.on(f"cpu-{flavour}")[(1,)](x, y, 3)
    ref = x.copy()
    for _ in range(3):
        ref = ref * 0.5 + np.arange(32)
    np.testing.assert_array_equal(y, ref)


def _int_input(dtype, rng):
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -100), min(info.max, 100), (16, 64), dtype=np.int64).astype(dtype)
    x[0] = info.max - np.arange(64) % 3   # sums and products wrap; unsigned max is not -1
    x[1, :5] = info.min
    return x


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64])
def test_int_reductions_wrap_and_respect_signedness(flavour, dtype):
    x = _int_input(dtype, np.random.default_rng(6))
    width = max(16, 64 // np.dtype(dtype).itemsize)  # 2D block rows need 64 bytes
    rsum, rmax = np.zeros((16, width), dtype), np.zeros((16, width), dtype)
    cmin, cprod = np.zeros((2, 64), dtype), np.zeros((2, 64), dtype)
    int_reductions_kernel.on(f"cpu-{flavour}")[(2,)](x, rsum, rmax, cmin, cprod, BM=8, BN=64)
    halves = [x[:8], x[8:]]
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(rsum[:, 0], x.sum(1, dtype=dtype))
        np.testing.assert_array_equal(cprod, np.stack([h.prod(0, dtype=dtype) for h in halves]))
    np.testing.assert_array_equal(rmax[:, 0], x.max(1))
    np.testing.assert_array_equal(cmin, np.stack([h.min(0) for h in halves]))
