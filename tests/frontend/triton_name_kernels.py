"""Kernels written with Triton's names (test_triton_names.py checks each error's line)."""
import types

import xetile_dsl as xd
import xetile_dsl.language as xt

tl = types.ModuleType("triton.language")   # stands in for `import triton.language as tl`
tl.dot = types.FunctionType((lambda a, b: None).__code__, {}, "dot")
tl.dot.__module__ = "triton.language"


@xd.jit
def uses_dot(a, c):
    acc = xt.dot(xt.load_tile(xt.init_tile(a, [0, 0], [8, 16])), xt.load_tile(xt.init_tile(a, [0, 0], [16, 16])))
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [8, 16]))


@xd.jit
def uses_load(a):
    x = xt.load(a)
    xt.store_tile(x, xt.init_tile(a, [0, 0], [8, 16]))


@xd.jit
def uses_store(a):
    xt.store(a, xt.load_tile(xt.init_tile(a, [0, 0], [8, 16])))


@xd.jit
def typo(a):
    xt.store_tile(xt.load_tiles(xt.init_tile(a, [0, 0], [8, 16])), xt.init_tile(a, [0, 0], [8, 16]))


@xd.jit
def calls_triton(a, c):
    acc = tl.dot(a, c)
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [8, 16]))


@xd.jit
def undefined_tl(a):
    pid = triton.language.program_id(0)  # noqa: F821 - the mistake under test
    xt.store_tile(xt.zeros([8, 16], xt.float32) + pid, xt.init_tile(a, [0, 0], [8, 16]))
