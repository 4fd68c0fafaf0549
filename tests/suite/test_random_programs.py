"""Hypothesis: random element-wise / reduction tile programs (float and integer, with
``xt.arange`` leaves) give the same result in the interpreter and compiled on the CPU
device."""
from __future__ import annotations

import importlib.util
import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xetile_dsl.language as xt

_UNARY = ["xt.abs({})", "xt.sqrt(xt.abs({}))", "xt.exp(xt.minimum({}, 4.0))", "xt.tanh({})", "xt.sigmoid({})",
          "(-{})", "xt.maximum({}, 0.0)"]
_BINARY = ["({} + {})", "({} - {})", "({} * {})", "xt.maximum({}, {})", "xt.minimum({}, {})",
           "xt.where({0} > {1}, {0}, {1})"]
# reductions take ``expr + x`` so that their operand is always a tile, never a constant
_REDUCE = ["xt.sum({} + x, axis=1)", "xt.max({} + x, axis=1)", "xt.min({} + y, axis=1)",
           "xt.sum({} + y, axis=0)", "xt.max({} + x, axis=0)"]
_counter = itertools.count()


def expressions(depth=3):
    leaf = st.sampled_from(["x", "y", "0.5", "2.0", "(xt.astype(xt.arange(0, BN), xt.float32) * 0.125)"])
    if depth == 0:
        return leaf
    sub = expressions(depth - 1)
    return st.one_of(
        leaf,
        st.builds(lambda f, a: f.format(a), st.sampled_from(_UNARY), sub),
        st.builds(lambda f, a, b: f.format(a, b), st.sampled_from(_BINARY), sub, sub),
        st.builds(lambda f, a, b: "({} + {})".format(f.format(a), b), st.sampled_from(_REDUCE), sub, sub),
    )


# integer programs: wrap-around arithmetic and reductions in the element type DT
_INT_BINARY = ["({} + {})", "({} - {})", "({} * {})", "xt.maximum({}, {})", "xt.minimum({}, {})"]
_INT_REDUCE = ["xt.sum({} + x, axis=1)", "xt.max({} + x, axis=1)", "xt.min({} + y, axis=0)",
               "xt.prod({} + y, axis=0)", "xt.sum({} + y, axis=0)"]
_INT_TYPES = {"int8": np.int8, "uint8": np.uint8, "int32": np.int32, "int64": np.int64}  # xt names


def int_expressions(depth=3):
    leaf = st.sampled_from(["x", "y", "3", "xt.arange(0, BN, DT)"])
    if depth == 0:
        return leaf
    sub = int_expressions(depth - 1)
    return st.one_of(
        leaf,
        st.builds(lambda f, a, b: f.format(a, b), st.sampled_from(_INT_BINARY), sub, sub),
        st.builds(lambda f, a, b: "({} + {})".format(f.format(a), b), st.sampled_from(_INT_REDUCE), sub, sub),
    )


def _kernel_from(expr: str, tmp_path, zero: str = "0.0", params: str = ""):
    """Write a kernel computing ``expr`` to a file (the frontend reads real source)."""
    name = f"rand_kernel_{next(_counter)}"
    path = tmp_path / f"{name}.py"
    path.write_text(
        "import xetile_dsl as xd\nimport xetile_dsl.language as xt\n\n\n"
        "@xd.jit\n"
        f"def kernel(a, b, c, BM: xt.constexpr, BN: xt.constexpr{params}):\n"
        "    pid = xt.program_id(0)\n"
        "    x = xt.load_tile(xt.init_tile(a, [pid * BM, 0], [BM, BN]))\n"
        "    y = xt.load_tile(xt.init_tile(b, [pid * BM, 0], [BM, BN]))\n"
        f"    r = x * {zero} + ({expr})\n"
        "    xt.store_tile(r, xt.init_tile(c, [pid * BM, 0], [BM, BN]))\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=expressions(), flavour=st.sampled_from(["pvc", "arc"]), seed=st.integers(0, 2**16))
def test_interpreter_and_compiled_agree(expr, flavour, seed, tmp_path):
    kernel = _kernel_from(expr, tmp_path)
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((16, 32)).astype(np.float32), rng.standard_normal((16, 32)).astype(np.float32)
    ref, got = np.zeros_like(a), np.zeros_like(a)
    kernel.on("interpret")[(2,)](a, b, ref, BM=8, BN=32)
    kernel.on(f"cpu-{flavour}")[(2,)](a, b, got, BM=8, BN=32)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4, err_msg=expr)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=int_expressions(), dtype=st.sampled_from(sorted(_INT_TYPES)), flavour=st.sampled_from(["pvc", "arc"]),
       seed=st.integers(0, 2**16))
def test_integer_programs_interpreter_and_compiled_agree(expr, dtype, flavour, seed, tmp_path):
    kernel = _kernel_from(expr, tmp_path, zero="0", params=", DT: xt.constexpr")
    dt = _INT_TYPES[dtype]
    rng = np.random.default_rng(seed)
    lo = 0 if np.iinfo(dt).min == 0 else -100
    a, b = (rng.integers(lo, 100, (16, 64)).astype(dt) for _ in range(2))
    ref, got = np.zeros_like(a), np.zeros_like(a)
    dt_const = getattr(xt, dtype)
    kernel.on("interpret")[(2,)](a, b, ref, BM=8, BN=64, DT=dt_const)
    kernel.on(f"cpu-{flavour}")[(2,)](a, b, got, BM=8, BN=64, DT=dt_const)
    np.testing.assert_array_equal(got, ref, err_msg=f"{dtype}: {expr}")
