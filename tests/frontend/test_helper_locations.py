"""An error in an op that a ``@jit`` helper from another file contributed (the frontend
inlines helpers) is located in that helper's file and line, not at the same line number
of the calling kernel's file.  The library GEMMs call ``kernels/gemm_loop.py``'s K loop,
so a tile shape the DPAS cannot take is reported at the helper's ``tile_mma``."""
from __future__ import annotations

import inspect

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError
from xetile_dsl.kernels import gemm_loop
from xetile_dsl.kernels.matmul import matmul_acc_kernel

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}


def _line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc"])
def test_lowering_error_in_a_helper_points_at_the_helper(target):
    with pytest.raises(CompilationError) as info:
        xd.compile(matmul_acc_kernel, SIG, {"BM": 3, "BN": 32, "BK": 16, "ACC": xt.float32}, target=target)
    err = info.value
    assert err.filename == inspect.getsourcefile(gemm_loop.k_loop.fn)
    assert err.line == _line_of(gemm_loop.k_loop.fn, "xt.tile_mma(")
    assert "xt.tile_mma(" in err.source_line and "operand A of tile_mma" in err.message
    assert f"{err.filename}:{err.line}:" in str(err)
