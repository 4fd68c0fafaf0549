"""Kernel mistakes are reported at the user's file and line, with what would be legal;
bad launch arguments fail before the device is touched."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import CompilationError, LaunchError
from xetile_dsl.kernels.matmul import matmul_kernel

from . import error_kernels as ek

F16 = np.float16


def _arrays(m=32, n=32, k=32, dt=F16):
    return np.zeros((m, k), dt), np.zeros((k, n), dt), np.zeros((m, n), np.float32)


def _expect(kernel, line, *fragments, target="cpu-pvc", **kw):
    with pytest.raises(CompilationError) as info:
        kernel.on(target)[(1, 1)](*kw.pop("args"), **kw)
    text = str(info.value)
    assert f"error_kernels.py:{line}:" in text, text
    for frag in fragments:
        assert frag in text, text
    assert "^" in text  # the caret under the offending expression
    return text


def test_tile_shape_the_target_cannot_load():
    text = _expect(ek.bad_tile_shape, 10, "16x20xf16", "multiple of [8, 16]", args=(*_arrays(), 32), BM=16, BN=16)
    assert "Traceback" not in text


def test_accumulator_dtype_tile_mma_cannot_produce():
    _expect(ek.bad_accumulator, 19, "cannot accumulate in f16", "f32", args=(*_arrays(), 32), BM=16, BN=16, BK=16,
            target="cpu-arc")


def test_runtime_value_where_a_constexpr_is_needed():
    _expect(ek.runtime_tile_shape, 25, "compile-time", args=(np.zeros((32, 32), F16), 16))


def test_unsupported_python_construct():
    _expect(ek.unsupported_syntax, 30, "unsupported Python construct", "With", args=(np.zeros((32, 32), F16), 3))


def test_undefined_name():
    _expect(ek.undefined_name, 36, "'undefined_thing' is not defined", args=(np.zeros((32, 32), F16), 3))


def test_mma_on_types_without_a_matrix_engine_form():
    a, b, c = _arrays(dt=np.float64)
    with pytest.raises(CompilationError, match="f64 x f64 has no matrix engine form on pvc; legal input pairs"):
        matmul_kernel.on("cpu-pvc")[(1, 1)](a, b, c, 32, BM=16, BN=16, BK=16)


def test_missing_constexpr():
    with pytest.raises(LaunchError, match="missing a required argument: 'BK'"):
        matmul_kernel.on("cpu-pvc")[(1, 1)](*_arrays(), 32, BM=16, BN=16)


def test_wrong_array_dtype_for_a_compiled_kernel():
    compiled = xd.compile(matmul_kernel, {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"},
                          {"BM": 16, "BN": 16, "BK": 16}, target="cpu-pvc")
    from xetile_dsl.runtime.launchers import get_launcher

    kernel = get_launcher().build(compiled.spirv, compiled.abi)
    a, b, c = _arrays()
    with pytest.raises(LaunchError, match="'a'.*f16"):
        kernel((1, 1), [a.astype(np.float32), b, c, 32])
    with pytest.raises(LaunchError, match="'c'"):
        kernel((1, 1), [a, b, c[0], 32])


def test_wrong_rank_is_a_clear_error():
    # a 1-D array is legal, but a 2-D tile of it is not: the error is at the init_tile
    with pytest.raises(CompilationError, match=r"matmul\.py:\d+:\d+: error: init_tile: a 1-D array takes one offset"):
        matmul_kernel.on("cpu-pvc")[(1, 1)](np.zeros(32, F16), np.zeros((32, 32), F16),
                                           np.zeros((32, 32), np.float32), 32, BM=16, BN=16, BK=16)
    with pytest.raises(CompilationError, match="arrays must be 1-D, 2-D, 3-D or 4-D, got a 5-D array"):
        matmul_kernel.on("cpu-pvc")[(1, 1)](np.zeros((1, 1, 2, 32, 32), F16), np.zeros((32, 32), F16),
                                           np.zeros((32, 32), np.float32), 32, BM=16, BN=16, BK=16)


def test_unsupported_array_dtype():
    with pytest.raises(LaunchError, match="complex128 are not supported"):
        matmul_kernel.on("cpu-pvc")[(1, 1)](np.zeros((32, 32), complex), *_arrays()[1:], 32, BM=16, BN=16, BK=16)


F32 = np.float32
_A = (np.zeros((32, 32), F32), 32)


@pytest.mark.parametrize("kernel,line,fragments", [
    (ek.shape_mismatch, 43, ("shape mismatch", "[8, 16] and [16, 8]", "only size-1 dimensions stretch")),
    (ek.loop_type_change, 49, ("type mismatch", "'acc' changes type inside the loop", "8x16xf32", "8x16xf16")),
    (ek.branch_type_mismatch, 56, ("type mismatch", "'v' is a tile value 8x16xi32 in the if branch",
                                   "8x16xf32 in the else branch")),
    (ek.runtime_arange, 64, ("must be a compile-time constant (a constexpr)",)),
    (ek.where_needs_bool, 70, ("type mismatch", "condition must be a comparison result", "f32")),
    (ek.tile_condition, 76, ("a condition must be a scalar or a [1, 1] tile", "not a larger tile value", "xt.where")),
    (ek.return_in_loop, 83, ("return inside a loop is not supported",)),
    (ek.store_wrong_dtype, 89, ("value dtype f32 differs from the array's f16",)),
    (ek.float_floordiv, 95, ("operator // is only defined on integers", "f32")),
    (ek.unsupported_call, 100, ("unsupported call", "sorted")),
    (ek.break_in_loop, 106, ("unsupported Python construct", "Break")),
    (ek.invert_float, 112, ("operator ~ is only defined on integers",)),
    (ek.bad_axis, 118, ("axis must be 0, 1", "got 2")),
    (ek.returns_value, 123, ("kernels cannot return a value",)),
    (ek.store_wrong_shape, 129, ("value shape [16, 16] does not match the tile shape [8, 16]",)),
    (ek.non_constexpr_reduction_axis, 135, ("axis must be a compile-time constant",)),
    (ek.index_tile_value, 141, ("a tile value can be indexed only with ':' and None", "xt.where")),
])
def test_malformed_kernel_reports_file_line_and_rule(kernel, line, fragments):
    arr = np.zeros((32, 32), np.float16 if kernel in (ek.store_wrong_dtype, ek.store_wrong_shape) else F32)
    text = _expect(kernel, line, *fragments, args=(arr, 32))
    assert "Traceback" not in text and "xdsl" not in text


def test_compiler_frames_are_hidden_unless_debug(monkeypatch):
    import traceback

    with pytest.raises(CompilationError) as info:
        ek.shape_mismatch.on("cpu-pvc")[(1, 1)](*_A)
    frames = traceback.extract_tb(info.value.__traceback__)
    assert not any("xetile_dsl/frontend/" in f.filename for f in frames)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    monkeypatch.setenv("XETILE_DEBUG", "1")
    with pytest.raises(CompilationError) as info:
        ek.shape_mismatch.on("cpu-pvc")[(1, 1)](*_A)
    assert any("xetile_dsl/frontend/" in f.filename for f in traceback.extract_tb(info.value.__traceback__))


def test_arange_compiles_and_agrees_with_the_interpreter():
    """arange used to be a located error (non-splat constants were not lowered); it now
    compiles, and the compiled and interpreted results are numpy's."""
    @xd.jit
    def iota_store(y):
        xt.store_tile(xt.astype(xt.arange(0, 16), xt.float32), xt.init_tile(y, [0, 0], [1, 16]))

    for target in ("cpu-arc", "interpret"):
        y = np.zeros((1, 16), np.float32)
        iota_store.on(target)[(1,)](y)
        np.testing.assert_array_equal(y[0], np.arange(16))


@xd.jit
def iota_mma(b, c):
    a = xt.astype(xt.broadcast_to(xt.arange(0, 16), [8, 16]), xt.float16)
    vb = xt.load_tile(xt.init_tile(b, [0, 0], [16, 16]))
    xt.store_tile(xt.tile_mma(a, vb), xt.init_tile(c, [0, 0], [8, 16]))


def test_broadcast_arange_as_an_mma_operand():
    """A broadcast arange feeds tile_mma's A directly, in every flavour (on ARC the row is
    laid out in A's 8-lane layout of A's element width, so it stretches into A's blocks)."""
    b = np.random.default_rng(0).integers(-2, 3, (16, 32)).astype(np.float16)
    ref = np.broadcast_to(np.arange(16, dtype=np.float32), (8, 16)) @ b[:, :16].astype(np.float32)
    for target in ("cpu-pvc", "cpu-arc", "interpret"):
        c = np.zeros((8, 32), np.float32)
        iota_mma.on(target)[(1,)](b, c)
        np.testing.assert_array_equal(c[:, :16], ref)
