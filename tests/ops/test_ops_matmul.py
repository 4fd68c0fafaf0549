"""ops.matmul against f64 numpy with bounds derived from the arithmetic (ops_ref.py), at a
shape that is no tile multiple (37 x 45 x 50: edges in M, N and K), on the CPU device in
both flavours and in the interpreter.  Compiled cases are few (each is one kernel
compile); the interpreter covers the whole dtype x transpose x epilogue matrix."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from ops_ref import BF16, assert_within, matmul_ref
from tf32_ref import tf32_matmul_ref
from xetile_dsl import ops
from xetile_dsl.errors import UsageError
from conftest_tools import require_dpnp, require_module
from xetile_dsl.runtime.devices import get_device

M, N, K = 37, 45, 50
RNG = np.random.default_rng(14)
A32 = RNG.standard_normal((M, K)).astype(np.float32)
B32 = RNG.standard_normal((K, N)).astype(np.float32)
BIAS = RNG.standard_normal(N).astype(np.float32)


def _stored(x, trans):
    """The array as the caller stores it: x itself or its transpose, row-major."""
    return np.ascontiguousarray(x.T) if trans else x


def _run(dtype, ta, tb, target, **kw):
    a, b = A32.astype(dtype), B32.astype(dtype)
    c = ops.matmul(_stored(a, ta), _stored(b, tb), trans_a=ta, trans_b=tb, target=target, **kw)
    return a, b, c


def _check(dtype, ta, tb, target, bias=None, activation=None, out_dtype=None):
    a, b, c = _run(dtype, ta, tb, target, bias=bias, activation=activation, out_dtype=out_dtype)
    want = np.dtype(out_dtype) if out_dtype is not None else np.dtype(dtype)
    assert c.shape == (M, N) and c.dtype == want
    ref, bound = matmul_ref(a, b, bias, activation, want)
    assert_within(c, ref, bound, f"{target} {np.dtype(dtype)} ta={ta} tb={tb} {activation}")


# --- compiled, PVC flavour: every transpose case, each with another epilogue ------------------
PVC_CASES = [  # (dtype, trans_a, trans_b, bias, activation, out_dtype)
    (np.float16, False, False, None, None, np.float32),
    (np.float16, False, True, BIAS, "relu", None),
    (np.float16, True, False, None, "silu", None),
    (np.float16, True, True, BIAS, "gelu", None),
    (BF16, True, False, BIAS, "gelu", None),
]


@pytest.mark.parametrize("dtype,ta,tb,bias,act,out", PVC_CASES)
def test_matmul_cpu_pvc(dtype, ta, tb, bias, act, out):
    _check(dtype, ta, tb, "cpu-pvc", bias, act, out)


@pytest.mark.parametrize("target", ["cpu-pvc", "interpret"])
def test_matmul_int8_exact(target):
    """int8 x int8 -> int32 is exact (full-range inputs; B stored transposed)."""
    a = RNG.integers(-128, 128, (M, K)).astype(np.int8)
    b = RNG.integers(-128, 128, (K, N)).astype(np.int8)
    c = ops.matmul(a, np.ascontiguousarray(b.T), trans_b=True, target=target)
    assert c.dtype == np.int32
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


def test_matmul_tf32_cpu_pvc():
    """f32 inputs run on the tf32 DPAS: exact products of tf32-rounded inputs, f32 sums."""
    c = ops.matmul(A32, B32, target="cpu-pvc")
    ref, f32_error = tf32_matmul_ref(A32, B32)
    np.testing.assert_allclose(c, ref, rtol=0, atol=f32_error)


@pytest.mark.parametrize("m", [1, 2, 3])
def test_matmul_tf32_few_rows(m):
    """f32 GEMVs (M below the 8-row tile): a tf32 A row is half a 16-lane register, so 1 or
    2 rows have no lane layout; the rows are padded to the 4-row DPAS (targets' m_values)."""
    a, b = A32[:m], B32
    c = ops.matmul(a, b, target="cpu-pvc")
    ref, f32_error = tf32_matmul_ref(a, b)
    np.testing.assert_allclose(c, ref, rtol=0, atol=f32_error)


def test_matmul_cpu_arc_transposed_epilogue():
    _check(np.float16, True, True, "cpu-arc", BIAS, "gelu")


# --- interpreter: the whole matrix ------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_matmul_interpreter_matrix(dtype):
    for (ta, tb), act in itertools.product(itertools.product((False, True), repeat=2),
                                           (None, "relu", "gelu", "gelu_tanh", "silu")):
        _check(dtype, ta, tb, "interpret", BIAS if act else None, act, np.float32 if act is None else None)


def test_matmul_interpreter_narrow_rows_are_padded():
    """Rows under 64 bytes (K = 5, N = 7 f16) are zero-padded copies for numpy inputs."""
    a, b = A32[:, :5].astype(np.float16), B32[:5, :7].astype(np.float16)
    c = ops.matmul(a, b, out_dtype=np.float32, target="interpret")
    ref, bound = matmul_ref(a, b)
    assert c.shape == (M, 7)
    assert_within(c, ref, bound, "narrow")


def test_matmul_fortran_order_is_read_transposed():
    """A column-major numpy array is read as the row-major transpose, not copied."""
    a, b = A32.astype(np.float16), B32.astype(np.float16)
    c = ops.matmul(np.asfortranarray(a), b, out_dtype=np.float32, target="interpret")
    ref, bound = matmul_ref(a, b)
    assert_within(c, ref, bound, "fortran")


def test_matmul_out_is_written():
    a, b = A32.astype(np.float16), B32.astype(np.float16)
    out = np.full((M, N), np.nan, np.float32)
    assert ops.matmul(a, b, out=out, out_dtype=np.float32, target="interpret") is out
    ref, bound = matmul_ref(a, b)
    assert_within(out, ref, bound, "out=")


# --- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("call,message", [
    (lambda: ops.matmul(A32.astype(np.float16), B32), "one dtype"),
    (lambda: ops.matmul(A32.astype(np.float16), B32[:7].astype(np.float16)), "inner dimensions"),
    (lambda: ops.matmul(A32, B32, target="cpu-arc"), "tf32"),
    (lambda: ops.matmul(A32.astype(np.int8), B32.astype(np.int8), activation="relu"), "int32"),
    (lambda: ops.matmul(A32.astype(np.float16), B32.astype(np.float16), activation="tanh"), "'gelu'"),
    (lambda: ops.matmul(A32.astype(np.float16), B32.astype(np.float16), bias=BIAS[:3]), r"shape \(45,\)"),
    (lambda: ops.matmul(A32.astype(np.float64), B32.astype(np.float64)), "float64"),
    (lambda: ops.matmul(A32[None], B32), "2-D"),
    (lambda: ops.matmul(A32.astype(np.float16), B32.astype(np.float16), out_dtype=np.int32), "allowed"),
])
def test_matmul_refuses_clearly(call, message):
    with pytest.raises(UsageError, match=message):
        call()


# --- device arrays ----------------------------------------------------------------------------
def test_matmul_dpnp_in_dpnp_out():
    """dpnp inputs: the result is a dpnp array on the inputs' queue (the kernel of the
    first PVC case: K = 40 specialises like K = 50).  N = 40: device rows need a 16-byte pitch."""
    dpnp = require_dpnp()
    a, b = A32[:, :40].astype(np.float16), B32[:40, :40].astype(np.float16)
    c = ops.matmul(dpnp.asarray(a), dpnp.asarray(b), out_dtype=np.float32, target="cpu-pvc")
    assert isinstance(c, dpnp.ndarray) and c.dtype == np.float32
    assert c.sycl_queue == dpnp.asarray(a).sycl_queue or c.sycl_device == dpnp.asarray(a).sycl_device
    ref, bound = matmul_ref(a, b)
    assert_within(dpnp.asnumpy(c), ref, bound, "dpnp")


def test_matmul_dpnp_narrow_rows_padded_on_the_queue():
    """K = 8 and N = 8 f16 (16-byte rows, under the 64-byte 2D-block minimum): a, b and the
    result are padded into zeroed dpnp arrays on the inputs' queue, and the result copied
    back into a dpnp array of the true shape (given with out= too)."""
    dpnp = require_dpnp()
    a, b = A32[:, :8].astype(np.float16), B32[:8, :8].astype(np.float16)
    da, db = dpnp.asarray(a), dpnp.asarray(b)
    ref, bound = matmul_ref(a, b, out_dtype=np.float16)
    c = ops.matmul(da, db, target="cpu-pvc")
    assert isinstance(c, dpnp.ndarray) and c.shape == (M, 8)
    assert_within(dpnp.asnumpy(c), ref, bound, "dpnp narrow")
    out = dpnp.full((M, 8), 7, dtype=np.float16)
    assert ops.matmul(da, db, out=out, target="cpu-pvc") is out
    assert_within(dpnp.asnumpy(out), ref, bound, "dpnp narrow out=")


def test_matmul_pyopencl_narrow_rows_in_place():
    """pyopencl arrays are not padded (no strided slice copy): narrow rows are used in place,
    through the launcher's per-lane specialisation, and the result is still right."""
    cl = require_module("pyopencl")
    import pyopencl.array as cla

    context = cl.Context(devices=[get_device("opencl:cpu", "pyopencl").native])
    queue = cl.CommandQueue(context)
    a, b = A32[:, :8].astype(np.float16), B32[:8, :8].astype(np.float16)
    c = ops.matmul(*(cla.to_device(queue, x) for x in (a, b)), target="cpu-pvc")
    assert isinstance(c, cla.Array) and c.shape == (M, 8)
    assert_within(c.get(), *matmul_ref(a, b, out_dtype=np.float16), "pyopencl narrow")


SMALL_M_CASES = [(t, m, d) for t in ("cpu-pvc", "cpu-arc") for m, d in ((1, np.float16), (3, np.float16), (2, np.int8),
                                                                         (13, np.float16))]


@pytest.mark.parametrize("target,m,dtype", SMALL_M_CASES + [("interpret", 1, np.float16), ("interpret", 3, np.int8)])
def test_matmul_small_m_uses_short_tiles(target, m, dtype):
    """M below the table's BM runs tiles of the smallest DPAS repeat count (1, 2, 4) or
    multiple of 8 that holds it (tests/ops/test_ops_isa.py: dpas.8x1 for M = 1); small
    integers make every product and sum exact, so equality is the reference."""
    rng = np.random.default_rng(m)
    a = rng.integers(-3, 4, (m, 70)).astype(dtype)
    b = rng.integers(-3, 4, (70, 40)).astype(dtype)
    bm = {1: 1, 2: 2, 3: 4, 13: 16}[m]
    assert ops.configs.gemm_tiles(target, np.dtype(dtype).name, m)[0] == bm
    c = ops.matmul(a, b, target=target)
    np.testing.assert_array_equal(c, (a.astype(np.int64) @ b.astype(np.int64)).astype(c.dtype))
