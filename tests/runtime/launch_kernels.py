"""The launch-path tests' kernel: each test file wraps it in its own ``jit`` (its own
memo and remembered launch), while the compiled program is shared through the cache."""
from __future__ import annotations

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt


def _shifted_scale(x, y, s, row0, BM: xt.constexpr, BN: xt.constexpr):
    """y[pid*BM:(pid+1)*BM] = s * x[row0 + pid*BM:...]: a float and an int scalar."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [row0 + pid * BM, 0], [BM, BN]))
    xt.store_tile(v * s, xt.init_tile(y, [pid * BM, 0], [BM, BN]))


def shifted_scale():
    """A new ``jit`` kernel of :func:`_shifted_scale` (nothing remembered yet)."""
    return xd.jit(_shifted_scale)


#: the input: small integers, so s * x is exact in f32
X = np.arange(64 * 16, dtype=np.float32).reshape(64, 16) % 17 - 8
