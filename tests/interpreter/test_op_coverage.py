"""The interpreter implements every op the frontend builds for the kernel language: the
kernels below call every ``xetile_dsl.language`` function, and each op of their IR — as
built, as parsed back from its text (where our dialects' own classes replace xDSL's), and
after ``xetile-wg-to-sg`` for the per-subgroup mode — has an implementation in ``IMPLS``."""
from __future__ import annotations

import ast
import inspect

import numpy as np
import pytest
from xdsl.dialects import builtin, func

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.compiler import to_xetile
from xetile_dsl.dialects import parse_module, print_module
from xetile_dsl.interpreter.engine import IMPLS, TERMINATORS
from xetile_dsl.interpreter.launch import kernel_function, subgroup_program

#: a workgroup GEMM's maps: A and B whole in K, C split in 2x2 (what xetile-wg-to-sg accepts)
MAP_A, MAP_B, MAP_C = xt.wg_map([2, 2], [16, 32]), xt.wg_map([2, 2], [32, 16]), xt.wg_map([2, 2], [16, 16])
ROWS = xt.wg_map([4, 1], [8, 32])
F = "f32[:,:]"


@xd.jit
def _float_calls(x, y, n):
    t = xt.init_tile(x, [xt.program_id(0) * 8, 0], [8, 16])
    xt.prefetch_tile(t)
    v = xt.load_tile(t)
    w = xt.exp(v) + xt.exp2(v) + xt.log(v) + xt.log2(v) + xt.sqrt(v) + xt.rsqrt(v) + xt.sin(v) + xt.cos(v)
    w = w + xt.tanh(v) + xt.erf(v) + xt.abs(v) + xt.sigmoid(v) + xt.fma(v, v, 1.0)
    w = xt.where(v > 0, w, -w) + xt.minimum(v, n) + xt.maximum(v, n) + xt.prod(v, 0) + xt.sum(v, 0)
    w = w + xt.min(v, 1) + xt.max(v, 1) + xt.tile_broadcast(xt.tile_reduce("add", v, [1]), [8, 16])
    w = w + xt.full([8, 16], 2.0, xt.float32) + xt.zeros([8, 16], xt.float32)
    xt.store_tile(w, xt.update_tile_offset(xt.init_tile(y, [0, 0], [8, 16]), 0, 0))


@xd.jit
def _int_calls(x, y, n):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    w = xt.argmax(v, 1) + xt.argmin(v, 1) + xt.arange(0, 16) + xt.cdiv(v, n) + xt.abs(-v) + xt.num_programs(0)
    w = w + xt.reshape(xt.expand_dims(xt.arange(0, 16), 0), [16])
    xt.store_tile(xt.astype(w, xt.int8).to(xt.int32), xt.init_tile(y, [0, 0], [8, 16]))


@xd.jit
def _atomic_calls(x, y, n):
    while xt.atomic_cas(x, [0, 0], 0, 1, sem="acquire") == 1:
        pass
    xt.fence("release", "workgroup")
    old = xt.atomic_rmw("xor", n, x, [0, 1]) + xt.atomic_xchg(x, [0, 0], 0, sem="release")
    xt.atomic_xchg(xt.init_tile(y, [0, 0], [8, 16]), xt.full([8, 16], old, xt.int32))


@xd.jit
def _memory_calls(x, y, z):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [16, 32]))
    xt.atomic_rmw("add", xt.broadcast_to(xt.sum(v, axis=1), [16, 32]), xt.init_tile(y, [0, 0], [16, 32]))
    xt.store_tile(xt.transpose(v), xt.init_tile(z, [0, 0], [32, 16]))
    offs = xt.arange(0, 16) * 2
    g = xt.load_gather(xt.init_tile(x, offs), offs < 8, padding=0.0)
    xt.store_scatter(g + 1.0, xt.init_tile(y, offs), offs < 8)
    s = xt.slm_alloc([16, 32], xt.float32)
    xt.store_tile(v, xt.init_tile(s, [0, 0], [16, 32]))
    xt.barrier()
    z[1, 2] = x[xt.program_id(0), 3] + xt.item(xt.sum(xt.sum(v, axis=1), axis=0))  # element read and write


@xd.jit
def _workgroup_calls(a, b, c):
    ta = xt.init_tile(a, [0, 0], [32, 32], wg_map=MAP_A)
    tb = xt.init_tile(b, [0, 0], [32, 32], wg_map=MAP_B)
    acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), wg_map=MAP_C)
    acc = xt.tile_conv_layout(acc, ROWS, MAP_C)
    acc = acc + xt.subgroup_id() + xt.num_subgroups()
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [32, 32], wg_map=ROWS))


@xd.jit
def _workgroup_transpose(a, c):
    v = xt.load_tile(xt.init_tile(a, [0, 0], [64, 32], wg_map=xt.wg_map([4, 1], [16, 32])))
    w = xt.tile_transpose(v, wg_map=xt.wg_map([1, 4], [32, 16]), source_wg_map=xt.wg_map([4, 1], [16, 32]))
    xt.store_tile(w, xt.init_tile(c, [0, 0], [32, 64], wg_map=xt.wg_map([1, 4], [32, 16])))


@xd.jit
def _math_library_calls(x, y, n):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    w = xt.tan(v) + xt.asin(v) + xt.acos(v) + xt.atan(v) + xt.sinh(v) + xt.cosh(v) + xt.asinh(v) + xt.acosh(v)
    w = w + xt.atanh(v) + xt.log10(v) + xt.log1p(v) + xt.expm1(v) + xt.cbrt(v) + xt.floor(v) + xt.ceil(v)
    w = w + xt.trunc(v) + xt.round(v) + xt.erfc(v) + xt.atan2(v, n) + xt.pow(v, n) + xt.fmod(v, n)
    w = w + xt.copysign(v, n) + xt.extern("hypot", v, n, result=xt.float32, numpy_impl=np.hypot)
    bad = xt.isnan(w) | xt.isinf(w) | xt.signbit(w)
    xt.store_tile(xt.where(bad | xt.isfinite(v), 0.0, w), xt.init_tile(y, [0, 0], [8, 16]))


@xd.jit
def _random_calls(o, y, seed):
    offs = xt.load_tile(xt.init_tile(o, [0, 0], [8, 16]))
    a, b, c, d = xt.randint4x(seed, offs)
    e, f, g, h = xt.philox(seed, a, b, c, d, n_rounds=2)
    u0, u1, u2, u3 = xt.rand4x(seed, offs)
    n0, n1, n2, n3 = xt.randn4x(seed, offs)
    w = xt.rand(seed, offs) + xt.randn(seed, offs) + u0 + n3
    w = w + xt.astype(xt.randint(seed, offs) ^ xt.umulhi(e, f) ^ g ^ h, xt.float32)
    xt.store_tile(w, xt.init_tile(y, [0, 0], [8, 16]))


@xd.jit
def _low_precision_calls(a, s, b, p, c, q):
    sa = xt.load_tile(xt.init_tile(s, [0, 0], [16, 1]))
    r = xt.dot_scaled(xt.load_tile(xt.init_tile(a, [0, 0], [16, 32])), sa,
                      xt.load_tile(xt.init_tile(b, [0, 0], [32, 16])), sa, format="e4m3")
    xt.store_tile(r, xt.init_tile(c, [0, 0], [16, 16]))
    xt.store_tile(xt.unpack_int4(xt.load_tile(xt.init_tile(p, [0, 0], [16, 16]))), xt.init_tile(q, [0, 0], [16, 32]))


KERNELS = [
    (_float_calls, {"x": F, "y": F, "n": "f32"}),
    (_math_library_calls, {"x": F, "y": F, "n": "f32"}),
    (_random_calls, {"o": "i32[:,:]", "y": F, "seed": "i64"}),
    (_int_calls, {"x": "i32[:,:]", "y": "i32[:,:]", "n": "i32"}),
    (_atomic_calls, {"x": "i32[:,:]", "y": "i32[:,:]", "n": "i32"}),
    (_memory_calls, {"x": F, "y": F, "z": F}),
    (_workgroup_calls, {"a": "f16[:,:]", "b": "f16[:,:]", "c": F}),
    (_workgroup_transpose, {"a": F, "c": F}),
    (_low_precision_calls, {"a": "f8e4m3fn[:,:]", "s": "u8[:,:]", "b": "f8e4m3fn[:,:]", "p": "u8[:,:]", "c": F,
                            "q": "i8[:,:]"}),
]


def _unimplemented(module) -> set[str]:
    return {f"{op.name} ({type(op).__module__}.{type(op).__qualname__})" for op in module.walk()
            if not isinstance(op, (builtin.ModuleOp, func.FuncOp, *TERMINATORS)) and op not in IMPLS}


@pytest.mark.parametrize("kernel, signature", KERNELS, ids=[k.__name__ for k, _ in KERNELS])
def test_every_op_the_frontend_builds_is_interpreted(kernel, signature):
    module = to_xetile(kernel, signature)
    parsed = parse_module(print_module(module))
    distributed, _ = subgroup_program(parsed, kernel_function(parsed), "pvc")
    for stage, ir in (("built", module), ("parsed", parsed), ("after xetile-wg-to-sg", distributed)):
        assert not _unimplemented(ir), f"{stage}: no interpreter implementation for {sorted(_unimplemented(ir))}"


def test_the_kernels_call_every_language_function():
    called = {node.attr for kernel, _ in KERNELS for node in ast.walk(ast.parse(inspect.getsource(kernel.fn)))
              if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "xt"}
    builtins = {name for name in dir(xt) if getattr(getattr(xt, name), "__xetile_builtin__", None)}
    assert builtins - called == set(), f"add calls of {sorted(builtins - called)} to a kernel above"
