"""The launch path as a user meets it: every array kind (numpy, dpnp, dpctl usm_ndarray,
pyopencl) x every flavour (CPU device in the PVC and ARC lane layouts, the interpreter)
x a plain and an autotuned kernel, each result against numpy; a mix the runtime cannot
launch is an XeTileError before anything runs."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import XeTileError
from xetile_dsl.runtime.devices import get_device

from conftest_tools import require_dpnp, require_module

ROWS, COLS = 32, 32


@xd.jit
def affine_kernel(x, y, s, BM: xt.constexpr):
    """y = s * x + 1, BM rows per program."""
    t = xt.init_tile(x, [xt.program_id(0) * BM, 0], [BM, 32])
    xt.store_tile(xt.load_tile(t) * s + 1.0, xt.init_tile(y, [xt.program_id(0) * BM, 0], [BM, 32]))


tuned_affine = xd.autotune(configs=[xd.Config({"BM": 8}), xd.Config({"BM": 16})], key=["s"], warmup=1, rep=2,
                           progress=False)(affine_kernel)


def _numpy(host):
    return host, lambda a: a


def _dpnp(host):
    dpnp = require_dpnp()
    return dpnp.asarray(host), dpnp.asnumpy


def _usm(host):
    dpnp = require_dpnp()
    return dpnp.asarray(host).get_array(), lambda a: dpnp.asnumpy(dpnp.asarray(a))   # a bare usm_ndarray


_CL = []   # (context, queue): the context must outlive every array made on the queue


def _pyopencl(host):
    cl = require_module("pyopencl")
    import pyopencl.array as cla

    if not _CL:
        ctx = cl.Context(devices=[get_device("opencl:cpu", "pyopencl").native])
        _CL.extend([ctx, cl.CommandQueue(ctx)])
    return cla.to_device(_CL[1], host), lambda a: a.get()


KINDS = {"numpy": _numpy, "dpnp": _dpnp, "usm_ndarray": _usm, "pyopencl": _pyopencl}


@pytest.mark.parametrize("tuned", [False, True], ids=["plain", "autotuned"])
@pytest.mark.parametrize("flavour", ["cpu-pvc", "cpu-arc", "interpret"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_array_kind_flavour_and_kernel(kind, flavour, tuned):
    rng = np.random.default_rng(11)
    x_host = rng.integers(-8, 8, (ROWS, COLS)).astype(np.float32)
    x, back = KINDS[kind](x_host)
    y, _ = KINDS[kind](np.zeros((ROWS, COLS), np.float32))
    if tuned:
        tuned_affine.on(flavour)[lambda m: (ROWS // m["BM"],)](x, y, 3.0)
    else:
        affine_kernel.on(flavour)[(ROWS // 16,)](x, y, 3.0, BM=16)
    xd.synchronize()
    # small integers times 3 plus 1: exact in f32, so equality is the reference
    np.testing.assert_array_equal(back(y), x_host * 3 + 1)
    np.testing.assert_array_equal(back(x), x_host)


def test_device_arrays_of_two_runtimes_are_refused_before_launch():
    dpnp = require_dpnp()
    x = dpnp.asarray(np.ones((ROWS, COLS), np.float32))
    y, back = _pyopencl(np.full((ROWS, COLS), 5.0, np.float32))
    with pytest.raises(XeTileError):
        affine_kernel.on("cpu-pvc")[(2,)](x, y, 3.0, BM=16)
    np.testing.assert_array_equal(back(y), 5.0)   # nothing ran
