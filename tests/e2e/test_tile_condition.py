"""A [1, 1] tile as an ``if`` condition (frontend/control.py): a value reduced along both
axes is the same in every lane, so it decides one subgroup-uniform branch (codegen reads
it from lane 0, and IGC emits a ``jmpi``, not a per-lane ``goto``).  ops.attention's lazy
rescale is such a branch.  Before: "a condition must be a scalar, not a tile value"."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.tools import ocloc


@xd.jit
def doubled_if_large_kernel(x, y, limit):
    """y = 2x when the largest element of x passes ``limit`` (the column maxima, across lanes
    on the 16-lane target, then their maximum), else y = x."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [16, 16]))
    out = v
    if xt.max(xt.max(v, axis=0), axis=1) > limit:
        out = v * 2.0
    xt.store_tile(out, xt.init_tile(y, [0, 0], [16, 16]))


X = (np.arange(256, dtype=np.float32).reshape(16, 16) - 100.0) / 64.0   # largest 155 / 64


@pytest.mark.parametrize("target", ["interpret", "cpu-pvc"])
@pytest.mark.parametrize("limit", [2.0, 3.0])
def test_tile_condition_takes_the_branch_the_maximum_decides(target, limit):
    y = np.zeros_like(X)
    doubled_if_large_kernel.on(target)[(1,)](X, y, limit)
    np.testing.assert_array_equal(y, X * 2.0 if X.max() > limit else X)


def test_tile_condition_is_a_uniform_branch(ocloc_path):
    isa = xd.compile(doubled_if_large_kernel, {"x": "f32[:,:]", "y": "f32[:,:]", "limit": "f32"}, {},
                     target="pvc").asm["isa"]
    assert ocloc.count(isa, r"\bjmpi\b") >= 1
    assert ocloc.count(isa, r"\bgoto\b") == 0
