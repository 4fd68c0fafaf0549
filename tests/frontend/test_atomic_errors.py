"""Mistakes in atomics are located errors at the user's line, saying what is legal, the
same in every flavour (both CPU-device flavours and the interpreter)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from xetile_dsl.errors import XeTileError

from . import atomic_error_kernels as ak

FLAVOURS = ["cpu-pvc", "cpu-arc", "interpret"]


def _line(name: str) -> int:
    lines = inspect.getsource(ak).splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(f"# ERROR {name}"))


CASES = {
    "bad_sem": ("sem='seq_cst' is not one of 'relaxed', 'acquire', 'release', 'acq_rel'", "i32"),
    "bad_scope": ("scope='system' is not one of 'workgroup', 'device'", "i32"),
    "cas_on_floats": ("compare-exchange on f32 is not supported; use an array of i32, u32, i64", "f32"),
    "index_count": ("1 index(es) for a 2-D array; give 2", "i32"),
    "xor_on_floats": ("kind is not defined for f32", "f32"),
    "relaxed_fence": ("a relaxed fence orders nothing", "i32"),
    "cas_on_a_tile": ("the tile form is atomic_cas(tile, cmp, val, mask=None), with no index list", "i32"),
    "tile_cas_on_floats": ("a tile of f32 has no compare-exchange; use a tile of i32, u32, i64", "f32"),
    "tile_cas_wrong_shape": ("cannot broadcast [2, 16] to [1, 16]", "i32"),
    "tile_cas_mask_on_block": ("a mask needs a scattered tile", "i32"),
    "tile_value_in_array_form": ("takes a scalar value (or a [1, 1] tile)", "i32"),
    "element_atomic_on_slm": ("atomics on shared local memory (xt.slm_alloc) are not supported", "i32"),
    "tile_atomic_on_int8": ("a tile of i8 has no atomics; use a tile of i32, u32, i64, f32, f16, bf16", "i8"),
}


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_atomic_mistake_is_located(name, flavour):
    message, dtype = CASES[name]
    arr = np.zeros((4, 16), {"i32": np.int32, "f32": np.float32, "i8": np.int8}[dtype])
    with pytest.raises(XeTileError) as info:
        getattr(ak, name).on(flavour)[(1,)](arr)
    text = str(info.value)
    assert f"atomic_error_kernels.py:{_line(name)}:" in text, text
    assert message in text, text


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_element_atomic_needs_one_subgroup(flavour):
    """An element atomic runs once per program: a workgroup of two subgroups is refused
    (by codegen when compiled, by the interpreter when it runs), at the atomic's line."""
    lock, x = np.zeros((1, 1), np.int32), np.zeros((16, 16), np.float32)
    with pytest.raises(XeTileError) as info:
        ak.element_atomic_in_subgroups.on(flavour)[(1,)](lock, x)
    text = str(info.value)
    assert f"atomic_error_kernels.py:{_line('element_atomic_in_subgroups')}:" in text, text
    assert "needs a program of one subgroup, but this workgroup has 2 subgroups" in text, text
