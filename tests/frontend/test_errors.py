"""Kernel mistakes are reported at the user's file and line, with what would be legal;
bad launch arguments fail before the device is touched."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
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
    from xetile_dsl.runtime.launcher import get_launcher

    kernel = get_launcher().build(compiled.spirv, compiled.abi)
    a, b, c = _arrays()
    with pytest.raises(LaunchError, match="'a'.*f16"):
        kernel((1, 1), [a.astype(np.float32), b, c, 32])
    with pytest.raises(LaunchError, match="'c'"):
        kernel((1, 1), [a, b, c[0], 32])


def test_wrong_rank_is_a_clear_error():
    with pytest.raises(CompilationError, match="arrays must be 2-D"):
        matmul_kernel.on("cpu-pvc")[(1, 1)](np.zeros(32, F16), np.zeros((32, 32), F16),
                                           np.zeros((32, 32), np.float32), 32, BM=16, BN=16, BK=16)


def test_unsupported_array_dtype():
    with pytest.raises(LaunchError, match="complex128 are not supported"):
        matmul_kernel.on("cpu-pvc")[(1, 1)](np.zeros((32, 32), complex), *_arrays()[1:], 32, BM=16, BN=16, BK=16)
