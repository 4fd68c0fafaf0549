"""Kernels with the mistakes of tests/frontend/test_messages.py (line numbers matter)."""
import math

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def uses_cumsum(a):
    v = xt.cumsum(xt.arange(0, 16))  # line 12


@xd.jit
def uses_math_gamma(a):
    t = xt.load_tile(xt.init_tile(a, [0, 0], [16, 16]))
    xt.store_tile(math.gamma(t), xt.init_tile(a, [0, 0], [16, 16]))  # line 18


@xd.jit
def uses_numpy_exp(a):
    t = xt.load_tile(xt.init_tile(a, [0, 0], [16, 16]))
    xt.store_tile(np.exp(t), xt.init_tile(a, [0, 0], [16, 16]))  # line 24


@xd.jit
def uses_math_sqrt(a):
    t = xt.load_tile(xt.init_tile(a, [0, 0], [16, 16]))
    xt.store_tile(math.sqrt(t), xt.init_tile(a, [0, 0], [16, 16]))  # line 30


@xd.jit
def min_of_runtime_scalars(a, n, m):
    k = min(n, m, key=abs)  # line 35: key= is compile-time only
    xt.store_tile(xt.zeros([16, 16], xt.float32), xt.init_tile(a, [k, 0], [16, 16]))


@xd.jit
def max_of_runtime_scalars(a, n, m):
    k = max(n, m, key=abs)  # line 41: key= is compile-time only
    xt.store_tile(xt.zeros([16, 16], xt.float32), xt.init_tile(a, [k, 0], [16, 16]))


@xd.jit
def masked_load_tile(a, n):
    t = xt.load_tile(xt.init_tile(a, [0, 0], [16, 16]), mask=xt.arange(0, 8) < n)  # line 47
    xt.store_tile(t, xt.init_tile(a, [0, 0], [16, 16]))


@xd.jit
def typo_of_ours(a):
    t = xt.laod_tile(xt.init_tile(a, [0, 0], [16, 16]))  # line 53


@xd.jit
def uses_extern(a):
    t = xt.load_tile(xt.init_tile(a, [0, 0], [16, 16]))
    xt.store_tile(xt.extern("atan2pi", t, t, result=np.float32), xt.init_tile(a, [0, 0], [16, 16]))  # line 59
