"""``xt.extern``: OpenCL builtins called by name, on the CPU device (PVC and ARC lane
layouts) and in the interpreter (through ``numpy_impl``), against numpy; its located
errors; and PVC/ARC machine code through ocloc.

Tolerances: OpenCL C's full-profile bound for ``hypot`` in f32 is 4 ulp (OpenCL C
specification, "ULP values for single precision built-in math functions"); ``ldexp``,
``nextafter``, ``fdim`` (one subtraction, one rounding) and ``mul_hi`` are exact there, so
they are compared for equality; numpy computes the same f32 operation in the interpreter."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
from xetile_dsl import dialects
import xetile_dsl.language as xt
from xetile_dsl import CompilationError
from xetile_dsl.errors import XeTileError
from xetile_dsl.tools import ocloc

TARGETS = ["cpu-pvc", "cpu-arc", "interpret"]
M, N = 8, 32


def fdim(x, y):
    """C's fdim on the host: ``x - y`` where positive, else +0."""
    return np.maximum(x - y, 0).astype(np.result_type(x, y))


def mul_hi(a, b):
    """OpenCL's mul_hi on int32: the high 32 bits of the 64-bit product."""
    return ((a.astype(np.int64) * b.astype(np.int64)) >> 32).astype(np.int32)


@xd.jit
def hypot_ldexp(x, y, e, h, l, Mc: xt.constexpr, Nc: xt.constexpr):
    a = xt.load_tile(xt.init_tile(x, [0, 0], [Mc, Nc]))
    b = xt.load_tile(xt.init_tile(y, [0, 0], [Mc, Nc]))
    k = xt.load_tile(xt.init_tile(e, [0, 0], [Mc, Nc]))
    xt.store_tile(xt.extern("hypot", a, b, result=xt.float32, numpy_impl=np.hypot), xt.init_tile(h, [0, 0], [Mc, Nc]))
    xt.store_tile(xt.extern("ldexp", a, k, result=xt.float32, numpy_impl=np.ldexp), xt.init_tile(l, [0, 0], [Mc, Nc]))


@pytest.mark.parametrize("target", TARGETS)
def test_hypot_and_two_type_ldexp(target):
    rng = np.random.default_rng(0)
    x, y = (rng.uniform(-100, 100, (M, N)).astype(np.float32) for _ in range(2))
    e = rng.integers(-20, 20, (M, N)).astype(np.int32)
    h, l = np.zeros_like(x), np.zeros_like(x)
    hypot_ldexp.on(target)[(1,)](x, y, e, h, l, Mc=M, Nc=N)
    exact = np.hypot(x.astype(np.float64), y.astype(np.float64))
    ulps = np.abs(h - exact) / np.spacing(exact.astype(np.float32)).astype(np.float64)
    assert ulps.max() <= 4, ulps.max()
    np.testing.assert_array_equal(l, np.ldexp(x, e))     # exact: no overflow or underflow here


@xd.jit
def half_nextafter(x, y, o, Mc: xt.constexpr, Nc: xt.constexpr):
    a = xt.load_tile(xt.init_tile(x, [0, 0], [Mc, Nc]))
    row = xt.load_tile(xt.init_tile(y, [0, 0], [1, Nc]))     # [1, N] broadcast over the rows
    xt.store_tile(xt.extern("nextafter", a, row, result=xt.float16, numpy_impl=np.nextafter),
                  xt.init_tile(o, [0, 0], [Mc, Nc]))


@pytest.mark.parametrize("target", TARGETS)
def test_f16_inputs_pass_as_f32_and_round_once(target):
    rng = np.random.default_rng(1)
    x = rng.uniform(-10, 10, (M, N)).astype(np.float16)
    y = rng.uniform(-10, 10, (1, N)).astype(np.float16)
    o = np.zeros_like(x)
    half_nextafter.on(target)[(1,)](x, y, o, Mc=M, Nc=N)
    want = np.nextafter(x.astype(np.float32), y.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(o, want)


@xd.jit
def scalars_and_ints(x, s, a, b, o, q, Mc: xt.constexpr, Nc: xt.constexpr):
    t = xt.load_tile(xt.init_tile(x, [0, 0], [Mc, Nc]))
    shift = xt.extern("fdim", s, 1.0, result=xt.float32, numpy_impl=fdim)   # on scalars
    xt.store_tile(xt.extern("fdim", t, shift, result=xt.float32, numpy_impl=fdim), xt.init_tile(o, [0, 0], [Mc, Nc]))
    ia = xt.load_tile(xt.init_tile(a, [0, 0], [Mc, Nc]))
    ib = xt.load_tile(xt.init_tile(b, [0, 0], [Mc, Nc]))
    xt.store_tile(xt.extern("mul_hi", ia, ib, result=xt.int32, numpy_impl=mul_hi), xt.init_tile(q, [0, 0], [Mc, Nc]))


@pytest.mark.parametrize("target", TARGETS)
def test_scalar_arguments_and_int_builtins(target):
    rng = np.random.default_rng(2)
    x = rng.uniform(-10, 10, (M, N)).astype(np.float32)
    a, b = (rng.integers(-2**31, 2**31 - 1, (M, N)).astype(np.int32) for _ in range(2))
    o, q = np.zeros_like(x), np.zeros_like(a)
    scalars_and_ints.on(target)[(1,)](x, np.float32(3.5), a, b, o, q, Mc=M, Nc=N)
    np.testing.assert_array_equal(o, fdim(x, np.float32(2.5)))
    np.testing.assert_array_equal(q, mul_hi(a, b))


# --- errors, located at the user's line ----------------------------------------------------------
@xd.jit
def no_numpy_impl(x):
    t = xt.init_tile(x, [0, 0], [8, 32])
    xt.store_tile(xt.extern("hypot", xt.load_tile(t), 2.0, result=xt.float32), t)   # line 101


@xd.jit
def bad_result(x):
    t = xt.init_tile(x, [0, 0], [8, 32])
    xt.store_tile(xt.extern("hypot", xt.load_tile(t), 2.0, result=np.float32), t)   # line 107


@xd.jit
def bool_result(x):
    t = xt.init_tile(x, [0, 0], [8, 32])
    xt.store_tile(xt.extern("hypot", xt.load_tile(t), 2.0, result=xt.int1), t)   # line 113


@xd.jit
def mismatched_shapes(x):
    t = xt.load_tile(xt.init_tile(x, [0, 0], [8, 32]))
    u = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(xt.extern("hypot", t, u, result=xt.float32), xt.init_tile(x, [0, 0], [8, 32]))   # line 120


@xd.jit
def unknown_name(x):
    t = xt.init_tile(x, [0, 0], [8, 32])
    xt.store_tile(xt.extern("hypt", xt.load_tile(t), 2.0, result=xt.float32), t)   # line 126


def test_the_interpreter_refuses_a_call_without_numpy_impl():
    x = np.zeros((8, 32), np.float32)
    with pytest.raises(XeTileError) as info:
        no_numpy_impl.on("interpret")[(1,)](x)
    text = str(info.value)
    assert "test_extern.py:101:" in text and "has no numpy_impl" in text and "numpy_impl=np.hypot" in text, text
    no_numpy_impl.on("cpu-pvc")[(1,)](x)       # compiled, it needs none
    np.testing.assert_allclose(x, 2.0, rtol=4 * 2.0**-23)


@pytest.mark.parametrize("target", ["interpret", "cpu-pvc"])
@pytest.mark.parametrize("kernel, line, fragments", [
    (bad_result, 107, ["result must be an xt dtype such as xt.float32"]),
    (bool_result, 113, ["result must be a float", "got xt.i1"]),
    (mismatched_shapes, 120, ["shape mismatch: [8, 32] and [8, 16] cannot be broadcast together"]),
    (unknown_name, 126, ["'hypt' is not an OpenCL builtin", "did you mean 'hypot'"]),
], ids=["np-dtype", "i1", "shapes", "unknown-name"])
def test_located_errors(kernel, line, fragments, target):
    with pytest.raises(CompilationError) as info:
        kernel.on(target)[(1,)](np.zeros((8, 32), np.float32))
    text = str(info.value)
    assert f"test_extern.py:{line}:" in text and "^" in text, text
    for fragment in fragments:
        assert fragment in text, text


def test_numpy_impl_is_keyed_by_its_qualified_name():
    text = hypot_ldexp.dependencies().text
    assert "read np.hypot = host function numpy:hypot" in text
    assert "read np.ldexp = host function numpy:ldexp" in text


# --- machine code ------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_machine_code_calls_the_builtin_inline(target, ocloc_path):
    signature = {"x": "f32[:,:]", "y": "f32[:,:]", "e": "i32[:,:]", "h": "f32[:,:]", "l": "f32[:,:]"}
    compiled = xd.compile(hypot_ldexp, signature, {"Mc": M, "Nc": N}, target=target)
    llvm = compiled.asm["llvm"]
    assert "@\"_Z5hypotDv8_fS_\"" in llvm and "@\"_Z5ldexpDv8_fDv8_i\"" in llvm, llvm
    assert ocloc.count(compiled.asm["isa"], ocloc.CALLA) == 0       # resolved from the OpenCL library
    assert compiled.report().spill_bytes == 0


def test_the_op_prints_parses_and_verifies():
    compiled = xd.compile(hypot_ldexp, {"x": "f32[:,:]", "y": "f32[:,:]", "e": "i32[:,:]", "h": "f32[:,:]",
                                        "l": "f32[:,:]"}, {"Mc": M, "Nc": N}, target="interpret")
    text = compiled.asm["xetile"]
    assert '"xetile.extern_elementwise"' in text and 'callee = "ldexp"' in text, text
    module = dialects.parse_module(text)
    module.verify()
    assert dialects.print_module(module) == text
    bad = text.replace('callee = "ldexp"', 'callee = "frexp"')      # a pointer-taking builtin
    with pytest.raises(Exception, match="not an OpenCL builtin it can call"):
        dialects.parse_module(bad).verify()
