"""xt.unpack_int4 against numpy (low nibble first, sign-extended or not), along both
axes, in the interpreter (random shapes) and on the CPU device (cpu-pvc, cpu-arc).  The
result is exact integers, so the comparison is exact."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError


@xd.jit
def unpack(x, y, M: xt.constexpr, N: xt.constexpr, SIGNED: xt.constexpr, AXIS: xt.constexpr):
    v = xt.unpack_int4(xt.load_tile(xt.init_tile(x, [0, 0], [M, N])), signed=SIGNED, axis=AXIS)
    xt.store_tile(v, xt.init_tile(y, [0, 0], [M * (2 - AXIS), N * (1 + AXIS)]))


def _reference(x, signed, axis):
    u = x.view(np.uint8)
    out = np.stack([u & 15, u >> 4], axis=axis + 1).reshape(
        (u.shape[0], 2 * u.shape[1]) if axis == 1 else (2 * u.shape[0], u.shape[1])).astype(np.int16)
    return (np.where(out >= 8, out - 16, out) if signed else out).astype(np.int8)


def _run(target, M, N, signed, axis, dtype, seed):
    x = np.random.default_rng(seed).integers(0, 256, (M, N)).astype(np.uint8).view(dtype)
    y = np.zeros((M * (2 - axis), N * (1 + axis)), np.int8)
    unpack.on(target)[(1,)](x, y, M=M, N=N, SIGNED=signed, AXIS=axis)
    assert np.array_equal(y, _reference(x, signed, axis))


@pytest.mark.parametrize("M,N,signed,axis,dtype", [(16, 32, True, 1, np.uint8), (16, 16, False, 0, np.int8),
                                                   (8, 16, False, 1, np.int8), (32, 16, True, 0, np.uint8)])
def test_unpack_int4_interpreter(M, N, signed, axis, dtype):
    _run("interpret", M, N, signed, axis, dtype, M + N)


@pytest.mark.parametrize("target,axis", [("cpu-pvc", 1), ("cpu-pvc", 0), ("cpu-arc", 1)])
def test_unpack_int4_cpu_device(target, axis):
    _run(target, 16, 32 if axis else 16, axis == 1, axis, np.uint8, 7)


def test_unpack_int4_refuses_other_types():
    with pytest.raises(CompilationError, match="v must be a 2-D int8 or uint8 tile"):
        unpack.on("interpret")[(1,)](np.zeros((16, 32), np.int32), np.zeros((16, 64), np.int8), M=16, N=32,
                                     SIGNED=True, AXIS=1)


def test_unpack_int4_refuses_a_length_the_interleave_cannot_take():
    """8 packed rows along axis 0: the interleaving f16 tile_mma needs K a multiple of 16; the
    error is at the kernel's line (it was an error inside the library's own code)."""
    with pytest.raises(CompilationError, match=r"along axis 0 must be a multiple of 16") as e:
        unpack.on("interpret")[(1,)](np.zeros((8, 16), np.uint8), np.zeros((16, 16), np.int8), M=8, N=16,
                                     SIGNED=True, AXIS=0)
    assert e.value.filename == __file__
