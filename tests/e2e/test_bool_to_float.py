"""Boolean tiles converted to floats (``astype`` and mixed arithmetic such as
``(v > 0) + 1.0``): LLVM's SPIR-V backend aborted the whole process on these conversions;
they are selects now, exact against numpy on the CPU device in both lane layouts."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def bool_to_float_kernel(x, y, h):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 32]))
    r = xt.astype((v > 0) + 1.0, xt.float32) + xt.astype(v < 0, xt.float32) * 4.0
    xt.store_tile(r, xt.init_tile(y, [0, 0], [8, 32]))
    xt.store_tile(xt.astype(v >= 0, xt.float16), xt.init_tile(h, [0, 0], [8, 32]))


@pytest.mark.parametrize("flavour", ["cpu-pvc", "cpu-arc", "interpret"])
def test_bool_tiles_convert_to_floats(flavour):
    x = np.random.default_rng(0).standard_normal((8, 32)).astype(np.float32)
    x[0, :3] = [0.0, -0.0, np.nan]
    y, h = np.zeros_like(x), np.zeros((8, 32), np.float16)
    bool_to_float_kernel.on(flavour)[(1,)](x, y, h)
    np.testing.assert_array_equal(y, (x > 0) + 1.0 + (x < 0) * 4.0)
    np.testing.assert_array_equal(h, (x >= 0).astype(np.float16))
