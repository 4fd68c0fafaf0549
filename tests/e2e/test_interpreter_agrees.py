"""The interpreter (the autotuner's reference) gives what the compiled `cpu` flavour gives,
or refuses what it refuses: bf16 constants, strided views, the grid's meta dict and
tile_mma's shape rules, each against numpy."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.dtypes import numpy_is_float, numpy_kind

BF16 = ml_dtypes.bfloat16
FLAVOURS = ["interpret", "cpu"]


@xd.jit
def _bf16_constants(x, y, BM: xt.constexpr, BN: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [BM, BN]))
    w = (v + 0.25) * xt.full((BM, BN), 1.5, xt.bfloat16)
    xt.store_tile(w, xt.init_tile(y, [0, 0], [BM, BN]))


@pytest.mark.parametrize("target", FLAVOURS)
def test_bf16_constants_keep_their_fraction(target):
    """(x + 0.25) * 1.5 on 0..7 is exact in bf16 (at most 7 significant bits); the interpreter dropped both
    fractions (bf16 is numpy kind 'V', so the constants went through an integer)."""
    x = (np.arange(8 * 16).reshape(8, 16) % 8).astype(BF16)
    y = np.zeros((8, 16), BF16)
    _bf16_constants.on(target)[(1,)](x, y, BM=8, BN=16)
    np.testing.assert_array_equal(y.astype(np.float64), (x.astype(np.float64) + 0.25) * 1.5)


def test_autotuning_accepts_a_correct_bf16_config(tmp_path, monkeypatch):
    """The autotuner's reference is the interpreter: with the fraction dropped there, the
    correct compiled result did not match it and the config was rejected."""
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))
    tuned = xd.autotune(configs=[xd.Config({"BM": 8, "BN": 16})], key=[], warmup=0, rep=1,
                        progress=False)(_bf16_constants)
    x = (np.arange(8 * 16).reshape(8, 16) % 8).astype(BF16)
    y = np.zeros((8, 16), BF16)
    tuned.on("cpu")[(1,)](x, y)
    np.testing.assert_array_equal(y.astype(np.float64), (x.astype(np.float64) + 0.25) * 1.5)
    assert [note for _, _, note in tuned.timings[next(iter(tuned.timings))]] == ["ok"]


def test_numpy_kind_knows_ml_dtypes():
    assert [numpy_kind(t) for t in (BF16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, np.float16,
                                     np.int8, np.uint32, np.bool_)] == ["f", "f", "f", "f", "i", "u", "b"]
    assert numpy_is_float(BF16) and not numpy_is_float(np.int32)


@xd.jit
def _add_one(x, y, BM: xt.constexpr, BN: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [BM, BN]), padding=0.0)
    xt.store_tile(v + 1.0, xt.init_tile(y, [0, 0], [BM, BN]))


@pytest.mark.parametrize("target", FLAVOURS)
def test_strided_views_are_read_and_written_in_place(target):
    """Views whose rows are further apart than their width: the kernel reads the view
    and its stores land in the base array, inside the view only."""
    big = np.arange(8 * 12, dtype=np.float32).reshape(8, 12)
    out = np.full((8, 12), -1.0, np.float32)
    x, y = big[1:5, 2:7], out[2:6, 3:8]
    assert not x.flags.c_contiguous and not y.flags.c_contiguous
    _add_one.on(target)[(1,)](x, y, BM=8, BN=8)
    want = np.full((8, 12), -1.0, np.float32)
    want[2:6, 3:8] = big[1:5, 2:7] + 1.0
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(big, np.arange(8 * 12, dtype=np.float32).reshape(8, 12))


def _copy_kernel():
    @xd.jit
    def copy_rows(x, y, M, BM: xt.constexpr, BN: xt.constexpr):
        m = xt.program_id(0) * BM
        v = xt.load_tile(xt.init_tile(x, [m, 0], [BM, BN]), padding=0.0)
        xt.store_tile(v * 2.0, xt.init_tile(y, [m, 0], [BM, BN]))
    return copy_rows


def _grid(meta):
    return (xt.cdiv(meta["M"], meta["BM"]),)


@pytest.mark.parametrize("target", FLAVOURS)
def test_grid_function_gets_arguments_and_constexprs_by_name(target):
    M = 20
    x = np.arange(M * 16, dtype=np.float32).reshape(M, 16)
    y = np.zeros_like(x)
    _copy_kernel().on(target)[_grid](x, y, M, BM=8, BN=16)
    np.testing.assert_array_equal(y, 2 * x)


@pytest.mark.parametrize("target", FLAVOURS)
def test_grid_function_asking_for_a_missing_name_is_a_launch_error(target):
    x = np.zeros((8, 16), np.float32)
    with pytest.raises(xd.LaunchError, match=r"meta\['N'\].*it has: x, y, M, BM, BN"):
        _copy_kernel().on(target)[lambda meta: (meta["N"],)](x, x.copy(), 8, BM=8, BN=16)


def test_autotuning_a_kernel_whose_grid_reads_an_argument(tmp_path, monkeypatch):
    """The autotuner checks each config against the interpreter with the same grid."""
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))
    tuned = xd.autotune(configs=[xd.Config({"BM": 8}), xd.Config({"BM": 16})], key=["M"], warmup=0, rep=1,
                        progress=False)(_copy_kernel())
    M = 20
    x = np.arange(M * 16, dtype=np.float32).reshape(M, 16)
    y = np.zeros_like(x)
    tuned.on("cpu")[_grid](x, y, M, BN=16)
    np.testing.assert_array_equal(y, 2 * x)
    assert all(note == "ok" for _, _, note in tuned.timings[next(iter(tuned.timings))])


@xd.jit
def _mma(a, b, c, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    x = xt.load_tile(xt.init_tile(a, [0, 0], [BM, BK]))
    y = xt.load_tile(xt.init_tile(b, [0, 0], [BK, BN]))
    xt.store_tile(xt.tile_mma(x, y, xt.zeros((BM, BN), xt.float32)), xt.init_tile(c, [0, 0], [BM, BN]))


def _mma_outcome(target, BM, BN, BK):
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (BM, BK)).astype(np.float16)
    b = rng.integers(-3, 4, (BK, BN)).astype(np.float16)
    c = np.zeros((BM, BN), np.float32)
    try:
        _mma.on(target)[(1,)](a, b, c, BM=BM, BN=BN, BK=BK)
    except xd.CompilationError as exc:
        return str(exc)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))
    return "ok"


@pytest.mark.parametrize("shape, refused", [
    ((8, 16, 8), "tile 8x8xf16 cannot be used as operand A of tile_mma on pvc: it is split into 8x16 blocks"),
    ((8, 8, 16), "tile 16x8xf16 cannot be used as operand B of tile_mma on pvc: it is split into 16x16 blocks"),
    ((3, 16, 16), "tile 3x16xf16 cannot be used as operand A of tile_mma on pvc: it is split into 8x16 blocks"),
    ((2, 16, 16), None), ((16, 32, 32), None)], ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else "")
def test_the_interpreter_refuses_the_tile_mma_shapes_the_compiler_refuses(shape, refused):
    """Same rule (lowering/analysis/mma_shapes.py), same message at the same line (the operand's
    load_tile); legal shapes give numpy's exact product in both."""
    interpreted, compiled = (_mma_outcome(t, *shape) for t in FLAVOURS)
    assert interpreted == compiled
    if refused is None:
        assert interpreted == "ok"
    else:
        assert refused in interpreted and ":" in interpreted.split(" error:")[0]
        assert "x = xt.load_tile" in interpreted or "y = xt.load_tile" in interpreted


@xd.jit
def _store_in_another_map(xa, out):
    v = xt.load_tile(xt.init_tile(xa, [0, 0], [64, 64], wg_map=xt.wg_map(sg_layout=[4, 1], sg_data=[16, 64])))
    xt.store_tile(v * 2.0 + 1.0, xt.init_tile(out, [0, 0], [64, 64], wg_map=xt.wg_map(sg_layout=[1, 4], sg_data=[64, 16])))


@pytest.mark.parametrize("target", FLAVOURS)
def test_a_store_in_another_wg_map_is_refused_in_every_flavour(target):
    """Found by scripts/fuzz.py (seeds 31016, 31023, 31054): the interpreter ran a store whose
    value a different wg_map distributes, which the compiler refuses; both refuse it now,
    with the same message at the store's line."""
    x = np.arange(4096, dtype=np.float32).reshape(64, 64)
    o = np.zeros_like(x)
    with pytest.raises(xd.CompilationError, match=r"the maps must agree \(convert with tile_conv_layout\)") as err:
        _store_in_another_map.on(target)[(1,)](x, o)
    assert "test_interpreter_agrees.py" in str(err.value)
    assert not o.any()
