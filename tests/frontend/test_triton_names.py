"""A kernel written with Triton's names gets a located error saying what to write
instead (xt.dot -> xt.tile_mma, xt.load -> xt.load_tile, tl.* -> xt.*)."""
from __future__ import annotations

import re
import types

import numpy as np
import pytest

import xetile_dsl.language as xt
from xetile_dsl import CompilationError
from xetile_dsl.frontend import suggestions

from . import triton_name_kernels as tk

A = np.zeros((16, 16), np.float16)
C = np.zeros((8, 16), np.float32)


@pytest.mark.parametrize("kernel, args, where, message", [
    (tk.uses_dot, (A, C), "14:11", "module xetile_dsl.language has no attribute 'dot'; did you mean xt.tile_mma("),
    (tk.uses_load, (A,), "20:9", "has no attribute 'load'; did you mean xt.load_tile(tile, mask=..., other=...) on a tile from "
                                 "xt.init_tile(array, offsets, shape), or xt.load_gather(tile, mask)?"),
    (tk.uses_store, (A,), "26:5", "has no attribute 'store'; did you mean xt.store_tile(value, tile, mask=...)"),
    (tk.typo, (A,), "31:19", "has no attribute 'load_tiles'; did you mean xt.load_tile?"),
    (tk.calls_triton, (A, C), "36:11", "tl.dot is Triton's, and Triton's operations cannot run in an xetile_dsl "
                                       "kernel (use `import xetile_dsl.language as xt`); write xt.tile_mma("),
    (tk.undefined_tl, (C,), "42:11", "name 'triton' is not defined; xetile_dsl kernels use `import "
                                     "xetile_dsl.language as xt`"),
])
def test_triton_names_point_at_ours_at_the_users_line(kernel, args, where, message):
    with pytest.raises(CompilationError) as info:
        kernel.on("interpret")[(1,)](*args)
    text = str(info.value)
    assert f"triton_name_kernels.py:{where}: error: " in text, text
    assert message in text, text
    assert "^" in text and "Traceback" not in text


def test_every_suggested_operation_exists():
    """The table's advice names only operations the language has."""
    for advice in suggestions.TRITON_EQUIVALENTS.values():
        for name in re.findall(r"xt\.(\w+)", advice):
            assert hasattr(xt, name), (advice, name)
    assert not any(hasattr(xt, name) for name in suggestions.TRITON_EQUIVALENTS if name != "range")


def test_a_triton_call_with_a_name_we_share_names_ours():
    program_id = types.FunctionType((lambda axis: None).__code__, {}, "program_id")
    program_id.__module__ = "triton.language"
    assert suggestions.is_triton(program_id)
    assert suggestions.triton_call(program_id).endswith("; write xt.program_id")
    assert suggestions.hint("qwzx") == ""     # nothing close: no guess
