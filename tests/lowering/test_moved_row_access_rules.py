"""convert-xetile-to-xegpu: block atomics and stores to order=[0, 1] tiles on tiles moved
by update_tile_offset. The tile's logical offsets travel next to its descriptors (loop
iter_args, if results); the per-row scattered accesses start from them; a tile used only
that way keeps no block descriptors at all (lowering/rewrites/scattered.py: RowOffsets)."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError


@xd.jit
def _atomic_in_loop(x, out, STEPS: xt.constexpr):
    tx = xt.init_tile(x, [0, 0], [16, 32])
    to = xt.init_tile(out, [0, 0], [16, 32])
    for _ in range(STEPS):
        xt.atomic_rmw("addf", xt.load_tile(tx), to)
        tx = xt.update_tile_offset(tx, 16, 0)
        to = xt.update_tile_offset(to, 16, 0)


@xd.jit
def _store_t_in_if(x, y, flag):
    ty = xt.init_tile(y, [0, 0], [16, 32], order=(0, 1))
    if flag > 0:
        ty = xt.init_tile(y, [16, 0], [16, 32], order=(0, 1))
    xt.store_tile(xt.load_tile(xt.init_tile(x, [0, 0], [16, 32])), ty)


@xd.jit
def _atomic_on_two_arrays(x, out, other, flag):
    t = xt.init_tile(out, [0, 0], [16, 32])
    if flag > 0:
        t = xt.init_tile(other, [0, 0], [16, 32])
    xt.atomic_rmw("addf", xt.load_tile(xt.init_tile(x, [0, 0], [16, 32])), t)


F32 = "f32[:,:]"


@pytest.mark.parametrize("target,sg", [("cpu-pvc", 16), ("cpu-arc", 8)])
def test_offsets_are_loop_carried_and_no_descriptor_is_kept(target, sg):
    kernel = xd.compile(_atomic_in_loop, {"x": F32, "out": F32}, {"STEPS": 3}, target=target)
    text = kernel.asm["xegpu"]
    assert "create_nd_tdesc %out" not in text  # only per-row scattered accesses use `out`
    loop = re.search(r"scf.for .* iter_args\((.*)\) -> \((.*)\) \{", text)
    assert loop.group(2).count("index") == 2  # the out tile's two offsets
    assert loop.group(2).count("tensor_desc<8x" + str(sg)) == 2 * 32 // sg  # x's block descriptors
    body = text[loop.end():]
    assert body.count("xegpu.atomic_rmw") == 16 * (32 // sg)  # one per row of each 8 x sg block
    assert "xegpu.create_tdesc %out" in body


def test_if_results_carry_the_offsets():
    kernel = xd.compile(_store_t_in_if, {"x": F32, "y": F32, "flag": "i32"}, {}, target="cpu-pvc")
    text = kernel.asm["xegpu"]
    assert "create_nd_tdesc %y" not in text
    assert re.search(r"= scf.if %\w+ -> \(index, index\)", text)
    assert text.count("xegpu.store %") == 16 * 2  # 16 logical rows x 2 blocks of 16 lanes


def test_two_arrays_in_one_tile_variable_is_a_located_error():
    with pytest.raises(CompilationError) as info:
        xd.compile(_atomic_on_two_arrays, {"x": F32, "out": F32, "other": F32, "flag": "i32"}, {}, target="cpu-pvc")
    text = str(info.value)
    assert "must stay on one array" in text and "test_moved_row_access_rules.py" in text
