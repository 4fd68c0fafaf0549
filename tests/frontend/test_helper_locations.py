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


@xd.jit
def _scaled_gemm(a, sa, b, sb, c):
    acc = xt.load_tile(xt.init_tile(c, [0, 0], [16, 16]))
    s1 = xt.load_tile(xt.init_tile(sa, [0, 0], [16, 2]))
    s2 = xt.load_tile(xt.init_tile(sb, [0, 0], [16, 2]))
    acc = xt.dot_scaled(xt.load_tile(xt.init_tile(a, [0, 0], [16, 64])), s1,
                        xt.load_tile(xt.init_tile(b, [0, 0], [32, 16])), s2, acc, a_format="e5m2", b_format="e2m1")
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [16, 16]))


def test_an_error_inside_a_language_function_is_at_the_users_call():
    """``xt.dot_scaled`` is kernel-language code of the library built in place: an error
    in the ops it contributes (here sm80's refusal of the fp8 conversion its decoding
    builds) is at the user's call, not in frontend/scaled_dot.py."""
    sig = {"a": "f8e4m3fn[:,:]", "sa": "u8[:,:]", "b": "u8[:,:]", "sb": "u8[:,:]", "c": "f32[:,:]"}
    with pytest.raises(CompilationError, match="fp8") as info:
        xd.compile(_scaled_gemm, sig, {}, target="sm80")
    err = info.value
    assert err.filename == inspect.getsourcefile(_scaled_gemm.fn)
    assert err.line == _line_of(_scaled_gemm.fn, "xt.dot_scaled(")
    assert err.col == err.source_line.index("xt.dot_scaled(")     # the call, not its load_tile arguments
