"""The persistent GEMM of examples/tutorial_09_persistent_matmul.py: a grid sized from
``xd.device_properties()`` (fewer workgroups than tiles, so each loops over tiles with
``xt.num_programs(0)``), in every flavour against numpy; and ``xt.num_programs`` itself."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "tutorial_09_persistent_matmul.py"


def _tutorial():
    spec = importlib.util.spec_from_file_location("tutorial_09_persistent_matmul", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TUTORIAL = _tutorial()
FLAVOURS = {"cpu-pvc": "cpu-pvc", "cpu-arc": "cpu-arc", "interpret": "cpu-pvc"}   # -> the facts it sizes by


@pytest.mark.parametrize("target", list(FLAVOURS))
def test_persistent_matmul_loops_over_more_tiles_than_programs(target):
    M, N, K, BM, BN = 144, 80, 64, 16, 16          # 9 x 5 = 45 tiles
    props = xd.device_properties(target=FLAVOURS[target])
    assert props.emulated and props.xe_cores > 0
    grid = TUTORIAL.persistent_grid(M, N, BM, BN, props)
    rng = np.random.default_rng(3)
    a = rng.integers(-4, 5, (M, K)).astype(np.float16)
    b = rng.integers(-4, 5, (K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float32)
    small = (min(grid[0], 7),)     # 7 programs: each runs 6 or 7 tiles (45 = 6 * 7 + 3)
    TUTORIAL.persistent_matmul.on(target)[small](a, b, c, M, N, K, BM=BM, BN=BN, BK=32, num_stages=2)
    # small integers: products and K-term sums are exact in f32
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("target", list(FLAVOURS))
def test_the_tutorials_own_grid(target):
    rng = np.random.default_rng(4)
    a = rng.integers(-4, 5, (200, 96)).astype(np.float16)
    b = rng.integers(-4, 5, (96, 168)).astype(np.float16)
    c = TUTORIAL.matmul(a, b, target)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@xd.jit
def program_counts(out, W: xt.constexpr):
    """Program (x, y) writes num_programs(0) * 100 + num_programs(1) * 10 + its linear id's parity."""
    x, y = xt.program_id(0), xt.program_id(1)
    v = xt.num_programs(0) * 100 + xt.num_programs(1) * 10 + (x + y * xt.num_programs(0)) % 2
    xt.store_tile(xt.full([1, W], xt.astype(v, xt.float32), xt.float32),
                  xt.init_tile(out, [y * xt.num_programs(0) + x, 0], [1, W]))


@pytest.mark.parametrize("target", list(FLAVOURS))
def test_num_programs_in_every_flavour(target):
    out = np.full((6, 16), np.nan, np.float32)
    program_counts.on(target)[(3, 2)](out, W=16)
    expect = 3 * 100 + 2 * 10 + np.arange(6) % 2
    np.testing.assert_array_equal(out, np.repeat(expect[:, None].astype(np.float32), 16, axis=1))
