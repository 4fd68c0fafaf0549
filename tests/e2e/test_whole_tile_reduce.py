"""``xt.max(v)`` / ``xt.sum(v)`` with no axis reduce the whole tile to [1, 1]: the frontend
emits a reduction along 1, then one along 0 (wg-to-sg distributes one dimension at a time;
a [0, 1] reduction of a workgroup tile was an internal compiler error).  Integer-valued f32
inputs keep every sum exact, so results compare exactly with numpy."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

TARGETS = ["interpret", "cpu-pvc", "cpu-arc"]


@xd.jit
def whole_subgroup_tile(x, mx, sm):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [16, 32]))
    xt.store_tile(xt.max(v), xt.init_tile(mx, [0, 0], [1, 1]))
    xt.store_tile(xt.sum(v), xt.init_tile(sm, [0, 0], [1, 1]))


@xd.jit
def whole_workgroup_tile(x, mx, sm):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [64, 64], wg_map=xt.wg_map(sg_layout=[2, 2], sg_data=[32, 32])))
    xt.store_tile(xt.max(v), xt.init_tile(mx, [0, 0], [1, 1]))
    xt.store_tile(xt.sum(v, axis=None), xt.init_tile(sm, [0, 0], [1, 1]))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kernel,shape", [(whole_subgroup_tile, (16, 32)), (whole_workgroup_tile, (64, 64))],
                         ids=["subgroup", "workgroup"])
def test_reduction_without_axis_is_the_whole_tile(kernel, shape, target):
    x = np.random.default_rng(3).integers(-50, 50, shape).astype(np.float32)
    mx, sm = np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32)
    kernel.on(target)[(1,)](x, mx, sm)
    assert mx[0, 0] == x.max()
    assert sm[0, 0] == x.sum()        # |sum| < 2^24: every partial sum is exact in f32
