"""``num_subgroups=`` at launch is the workgroup's subgroup count, checked against the
kernel's own (its wg_map sg_layout), compiled and interpreted alike; a kernel without
wg_map runs in subgroup 0 of any count."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
from xetile_dsl import LaunchError
from xetile_dsl.errors import CompilationWarning
from xetile_dsl.kernels.matmul import matmul_kernel

from .test_scalar_ops import subgroup_numbers   # a 4-subgroup (sg_layout [4, 1]) workgroup kernel

CONST = {"BM": 16, "BN": 16, "BK": 16}


@pytest.mark.parametrize("target", ["cpu-pvc", "interpret"])
def test_the_right_count_launches_and_a_wrong_one_says_the_kernels(target):
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32) % 13
    out = np.full_like(x, np.nan)
    subgroup_numbers.on(target)[(1,)](x, out, num_subgroups=4)
    band = np.repeat(np.arange(4, dtype=np.float32), 16)[:, None]
    np.testing.assert_array_equal(out, x * 4 + band)
    with pytest.raises(LaunchError, match=r"num_subgroups=1, but subgroup_numbers runs 4 subgroup\(s\) per "
                                          r"workgroup .*pass num_subgroups=4 or leave it out"):
        subgroup_numbers.on(target)[(1,)](x, out, num_subgroups=1)


def test_a_subgroup_level_kernel_works_in_subgroup_zero():
    """Without wg_map any count launches: subgroup 0 does the work (decision 045)."""
    a, b = np.ones((32, 32), np.float16), np.ones((32, 32), np.float16)
    c = np.zeros((32, 32), np.float32)
    matmul_kernel.on("interpret")[(2, 2)](a, b, c, 32, num_subgroups=1, **CONST)
    np.testing.assert_array_equal(c, np.full((32, 32), 32.0))
    c[:] = 0
    with pytest.warns(CompilationWarning, match=r"num_subgroups=2: matmul_kernel has no wg_map, so its work is "
                                                   r"not split"):
        matmul_kernel.on("interpret")[(2, 2)](a, b, c, 32, num_subgroups=2, **CONST)
    np.testing.assert_array_equal(c, np.full((32, 32), 32.0))   # ones . ones over K = 32, once


def test_config_without_num_subgroups_passes_no_option():
    assert xd.Config({"BM": 16}).all_kwargs() == {"BM": 16}
    assert str(xd.Config({"BM": 16})) == "Config(BM=16)"
    assert xd.Config({"BM": 16}, num_subgroups=4).all_kwargs() == {"BM": 16, "num_subgroups": 4}
