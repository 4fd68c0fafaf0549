"""Mistaken masks on tiles are reported at the user's line, in every flavour alike, with
what would be legal: a mask that does not broadcast to the tile, a mask that is not
boolean, an ``other`` that is not a value of the tile's type, a mask on a scattered tile
(load_gather/store_scatter take those), a tile carried through a loop."""
from __future__ import annotations

import numpy as np
import pytest

from xetile_dsl import CompilationError

from . import mask_error_kernels as mk

F32 = np.zeros((32, 32), np.float32)
I32 = np.zeros((32, 32), np.int32)

CASES = [
    (mk.wrong_shape, (F32, 5), 9, ["load_tile: a mask of shape [1, 8] does not fit the tile's [16, 32]",
                                   "[1, 32] rows, [16, 1] columns"]),
    (mk.not_boolean, (F32, 5), 16, ["store_tile: the mask must be a boolean tile value",
                                    "got a tile value of i32 elements, shape [1, 32]"]),
    (mk.other_is_a_string, (F32, 5), 22, ["load_tile: other must be a number", "got"]),
    (mk.other_does_not_fit, (I32, 5), 29, ["load_tile: other -inf is not an integer", "i32"]),
    (mk.other_is_an_array, (F32, 5), 36, ["load_tile: other must be a number", "runtime scalar"]),
    (mk.scattered_load, (F32, 5), 43, ["load_tile: mask= on a scattered tile",
                                       "xt.load_gather(tile, mask, padding=...)"]),
    (mk.scattered_store, (F32, 5), 51, ["store_tile: mask= on a scattered tile",
                                        "xt.store_scatter(value, tile, mask)"]),
    (mk.other_without_mask, (F32, 5), 57, ["load_tile: other= gives the value of masked-off elements and "
                                           "needs a mask=", "padding="]),
    (mk.float_scalar_other_on_ints, (I32, 2.5), 64, ["load_tile: other is a f32 value but the tile holds i32",
                                                     "xt.astype"]),
    (mk.loop_carried_store, (F32, 5), 73, ["store_tile: mask= needs a tile made by init_tile",
                                           "init_tile it inside the loop"]),
]


@pytest.mark.parametrize("flavour", ["cpu-pvc", "cpu-arc", "interpret"])
@pytest.mark.parametrize("kernel,args,line,fragments", CASES, ids=[c[0].__name__ for c in CASES])
def test_mask_mistakes_are_located(kernel, args, line, fragments, flavour):
    with pytest.raises(CompilationError) as info:
        kernel.on(flavour)[(1,)](*args)
    text = str(info.value)
    assert f"mask_error_kernels.py:{line}:" in text and "^" in text, text
    assert "Traceback" not in text
    for fragment in fragments:
        assert fragment in text, text


V8 = np.zeros(40, np.float32)
NARROW = [
    # a per-lane store of 8 columns: PVC has 16 lanes (ARC's 8 would run it); the interpreter
    # follows the CPU device's flavour, PVC by default
    (mk.narrow_lane_store, (V8, 5), 81, ["store_tile: this mask is no row edge, so it stores per lane",
                                         "8 columns a multiple of 16", "make the tile 16 columns wide"]),
    # a scattered tile of 8 lanes: the lowering's rule, which the interpreter now checks too
    (mk.narrow_gather, (V8, 5), 87, ["a scattered tile must be [R, C] with C a multiple of the subgroup "
                                     "size 16", "got [1, 8]"]),
]


@pytest.mark.parametrize("flavour", ["cpu-pvc", "interpret"])
@pytest.mark.parametrize("kernel,args,line,fragments", NARROW, ids=[c[0].__name__ for c in NARROW])
def test_fewer_lanes_than_the_subgroup_are_refused_alike(kernel, args, line, fragments, flavour):
    test_mask_mistakes_are_located(kernel, args, line, fragments, flavour)
