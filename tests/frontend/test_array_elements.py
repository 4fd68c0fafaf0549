"""Array elements as scalars (``x[i, j]`` reads, ``x[i, j] = s`` writes), Python's
min/max/abs on runtime scalars, ``xt.item`` and loop-carried numbers: the IR the frontend
builds, and each mistake located at the user's line with what is legal."""
from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

from xetile_dsl import CompilationError
from xetile_dsl.compiler import to_xetile
from xetile_dsl.dialects import parse_module, print_module

from . import element_kernels as ek


def _ir(fn, sig, constants=None) -> str:
    module = to_xetile(fn, sig, constants or {}, "pvc")
    module.verify()
    text = print_module(module)
    assert print_module(parse_module(text)) == text  # printable and parseable
    return text


def _marker_line(name: str) -> int:
    lines, _ = inspect.getsourcelines(ek)  # a whole module: from line 1
    return next(i for i, line in enumerate(lines, 1) if line.rstrip().endswith(f"# <- {name}"))


def test_element_read_is_a_guarded_load_of_the_arrays_dtype():
    text = _ir(ek.read_write, {"x": "i32[:,:]", "out": "f32[:,:]"})
    # one unsigned compare per index against the extent (a negative index is a huge unsigned value)
    assert len(re.findall(r"arith.cmpi ult, %\w+, %\w+ : index", text)) == 4  # 2 for the read, 2 for the write
    assert re.search(r"scf.if %\w+ -> \(i32\)", text)
    assert re.search(r"memref.load %x\[%\w+, %\w+\] : memref<\?x\?xi32", text)
    assert re.search(r"arith.constant 0 : i32", text)  # the value outside the array
    assert re.search(r"arith.sitofp %\w+ : \w+ to f32", text)  # the written value takes out's dtype
    assert re.search(r"memref.store %\w+, %out\[%\w+, %\w+\] : memref<\?x\?xf32", text)


def test_int32_element_is_an_offset_and_a_loop_bound():
    text = _ir(ek.sizes_as_bounds, {"sizes": "i32[:,:]", "a": "f32[:,:]", "c": "f32[:,:]"}, dict(BM=8))
    assert re.search(r"arith.index_cast %\w+ : i\d+ to index", text)
    assert re.search(r"scf.for %\w+ = %\w+ to %\w+ step %\w+", text)
    assert "xetile.init_tile" in text


def test_min_max_abs_of_runtime_scalars_become_ops_and_numbers_still_fold():
    text = _ir(ek.builtins_on_scalars, {"x": "i32[:,:]", "out": "i32[:,:]"})
    assert text.count("arith.minsi") == 2 and text.count("arith.maxsi") == 1 and "math.absi" in text
    assert re.search(r"arith.constant 14 : i32", text)  # min(3, 5) + max([2, 7]) + abs(-4), folded


def test_numbers_reassigned_by_runtime_control_flow_become_runtime_values():
    text = _ir(ek.carried_numbers, {"f": "f32[:,:]", "out": "f32[:,:]"})
    assert re.search(r"scf.if %\w+ -> \(index\)", text)  # v = 0 / v = pid
    # acc = 0 carried through a loop that adds float32 elements: the loop carries an f32
    assert re.search(r"scf.for .* iter_args\(%acc\w* = %\w+\) -> \(f32\)", text)
    assert text.count("scf.for") == 1  # the first attempt (acc as an int) left nothing behind


@pytest.mark.parametrize("kernel, fragments", [
    ("wrong_count", ["wrong number of indices: 1 index on a 2-D array of i32", "x[i, j]"]),
    ("float_index", ["array index 0 must be an integer", "f32", "xt.astype"]),
    ("item_of_many", ["xt.item needs a value with exactly one element", "1x16"]),
    ("tile_into_element", ["an element write stores one scalar", "xt.store_tile"]),
    ("slice_of_array", ["slices of arrays are not supported", "xt.init_tile"]),
    ("negative_index", ["negative indices are not wrapped"]),
    ("wrong_count_store", ["wrong number of indices: 3 indices on a 2-D array of i32"]),
])
def test_mistakes_are_located_and_say_what_is_legal(kernel, fragments):
    with pytest.raises(CompilationError) as info:
        getattr(ek, kernel).on("cpu-pvc")[(1,)](np.zeros((4, 16), np.int32), np.zeros((4, 16), np.int32))
    text = str(info.value)
    assert f"element_kernels.py:{_marker_line(kernel)}:" in text, text
    for fragment in fragments:
        assert fragment in text, text
    assert "^" in text and "internal compiler error" not in text


def test_a_global_in_an_index_is_read_not_assigned():
    """``out[ROW, 0] = ...`` binds no name: ROW stays a global read (folded to 2)."""
    text = _ir(ek.global_index, {"x": "i32[:,:]", "out": "i32[:,:]"})
    assert "arith.constant 2 : index" in text and text.count("memref.store") == 2
