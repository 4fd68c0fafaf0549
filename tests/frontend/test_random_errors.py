"""The random-number functions' argument mistakes are located at the call, say what is
legal, and are the same error in the compiled and the interpreted flavours."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import CompilationError


@xd.jit
def float_seed(o, y, s):
    offs = xt.load_tile(xt.init_tile(o, [0, 0], [8, 16]))
    xt.store_tile(xt.rand(s, offs), xt.init_tile(y, [0, 0], [8, 16]))  # MARK float_seed


@xd.jit
def tile_seed(o, y):
    offs = xt.load_tile(xt.init_tile(o, [0, 0], [8, 16]))
    xt.store_tile(xt.rand(offs, offs), xt.init_tile(y, [0, 0], [8, 16]))  # MARK tile_seed


@xd.jit
def float_offsets(o, y):
    v = xt.load_tile(xt.init_tile(y, [0, 0], [8, 16]))
    xt.store_tile(xt.rand(3, v), xt.init_tile(y, [0, 0], [8, 16]))  # MARK float_offsets


@xd.jit
def bad_rounds(o, y, N: xt.constexpr):
    offs = xt.load_tile(xt.init_tile(o, [0, 0], [8, 16]))
    xt.store_tile(xt.rand(3, offs, n_rounds=N), xt.init_tile(y, [0, 0], [8, 16]))  # MARK bad_rounds


@xd.jit
def wide_umulhi(o, y):
    offs = xt.load_tile(xt.init_tile(o, [0, 0], [8, 16]))
    xt.store_tile(xt.rand(3, xt.umulhi(offs, xt.astype(offs, xt.int64))), xt.init_tile(y, [0, 0], [8, 16]))  # MARK wide_umulhi


def _line(mark: str) -> int:
    lines, start = inspect.getsourcelines(inspect.getmodule(_line))
    return next(i for i, text in enumerate(lines, 1) if f"# MARK {mark}" in text)


CASES = {
    "float_seed": (float_seed, (2.5,), {}, "the seed must be an integer"),
    "tile_seed": (tile_seed, (), {}, "the seed must be an integer"),
    "float_offsets": (float_offsets, (), {}, "rand's offsets must be a 32-bit integer"),
    "bad_rounds": (bad_rounds, (), {"N": -1}, "n_rounds must be a non-negative constexpr int"),
    "wide_umulhi": (wide_umulhi, (), {}, "umulhi's y must be a 32-bit integer (int32 or uint32)"),
}


@pytest.mark.parametrize("target", ["cpu", "interpret"])
@pytest.mark.parametrize("case", list(CASES))
def test_random_argument_errors_are_located(case, target):
    kernel, extra, constants, fragment = CASES[case]
    o, y = np.zeros((8, 16), np.int32), np.zeros((8, 16), np.float32)
    with pytest.raises(CompilationError) as info:
        kernel.on(target)[(1,)](o, y, *extra, **constants)
    text = str(info.value)
    assert f"test_random_errors.py:{_line(case)}:" in text, text
    assert fragment in text and "^" in text, text
