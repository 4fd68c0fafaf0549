"""``num_subgroups=`` at launch is the workgroup's subgroup count, checked against the
kernel's own (its wg_map sg_layout), compiled and interpreted alike; a kernel without
wg_map takes any count (split by compiler-chosen wg_maps, or run in subgroup 0)."""
from __future__ import annotations

import re
import warnings

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


def test_a_subgroup_level_kernel_takes_any_count():
    """Without wg_map any count launches: split by compiler-chosen wg_maps where the C
    tile has that many pieces of whole DPAS blocks (16x16 into two 8x16 on pvc, decision
    048), else subgroup 0 does the work, with a warning (decision 045)."""
    a, b = np.ones((32, 32), np.float16), np.ones((32, 32), np.float16)
    c = np.zeros((32, 32), np.float32)
    matmul_kernel.on("interpret")[(2, 2)](a, b, c, 32, num_subgroups=1, **CONST)
    np.testing.assert_array_equal(c, np.full((32, 32), 32.0))
    for count in (2, 4):
        c[:] = 0
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            matmul_kernel.on("interpret-subgroups")[(2, 2)](a, b, c, 32, num_subgroups=count, **CONST)
        np.testing.assert_array_equal(c, np.full((32, 32), 32.0))   # ones . ones over K = 32, once
        texts = [str(w.message) for w in seen if issubclass(w.category, CompilationWarning)]
        if count == 2:
            assert texts == []
        else:
            assert len(texts) == 1 and re.search(r"num_subgroups=4: matmul_kernel has no wg_map and the compiler "
                                                 r"cannot choose one \(its tile_mma result 16x16 does not split "
                                                 r"into 4 pieces of whole 8x16 DPAS blocks on pvc\)", texts[0])


def test_config_without_num_subgroups_passes_no_option():
    assert xd.Config({"BM": 16}).all_kwargs() == {"BM": 16}
    assert str(xd.Config({"BM": 16})) == "Config(BM=16)"
    assert xd.Config({"BM": 16}, num_subgroups=4).all_kwargs() == {"BM": 16, "num_subgroups": 4}
