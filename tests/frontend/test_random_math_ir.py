"""The IR of the random numbers and the math library: a draw is uint32 arith (a 64-bit
product for the multiply-high, no op of its own), a constexpr seed's key is folded into
constants, and each math function is one math/arith op (f16 through f32)."""
from __future__ import annotations

import re

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.compiler import to_xetile
from xetile_dsl.dialects import parse_module, print_module

SIG = {"o": "i32[:,:]", "y": "f32[:,:]", "seed": "i64"}


@xd.jit
def draw(o, y, seed, RUNTIME: xt.constexpr):
    offs = xt.load_tile(xt.init_tile(o, [0, 0], [8, 16]))
    s = seed if RUNTIME else 12345
    xt.store_tile(xt.rand(s, offs), xt.init_tile(y, [0, 0], [8, 16]))


@xd.jit
def half_math(x, y):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    w = xt.atan2(v, v) + xt.fmod(v, v) + xt.erfc(v)
    xt.store_tile(xt.where(xt.isnan(w) | xt.signbit(w), v, w), xt.init_tile(y, [0, 0], [8, 16]))


def _ir(fn, sig, constants) -> str:
    module = to_xetile(fn, sig, constants, "pvc")
    module.verify()
    text = print_module(module)
    assert print_module(parse_module(text)) == text
    return text


def test_a_draw_is_uint32_arithmetic():
    text = _ir(draw, SIG, {"RUNTIME": 0})
    assert len(re.findall(r"arith.muli .* : vector<8x16xi64>", text)) == 20   # 2 multiply-highs x 10 rounds
    assert len(re.findall(r"arith.muli .* : vector<8x16xui32>", text)) >= 19   # the low products (round 1's
    assert "arith.sitofp" in text and "arith.mulf" in text                     # c2 = 0 ones may fold)
    assert not re.search(r"arith.addi [^\n]*: (i32|ui32)\n", text)    # constexpr seed: no key arithmetic


def test_a_runtime_seed_raises_its_key_on_scalars():
    text = _ir(draw, SIG, {"RUNTIME": 1})
    assert len(re.findall(r"arith.addi [^\n]*: i32\n", text)) == 2 * 10   # k0, k1 raised each round


def test_half_math_computes_in_f32():
    text = _ir(half_math, {"x": "f16[:,:]", "y": "f16[:,:]"}, {})
    for op in ("math.atan2", "math.erfc"):
        assert re.search(op + r" [^\n]*vector<8x16xf32>", text), op
    assert re.search(r"arith.remf [^\n]*vector<8x16xf16>", text)   # exact: no f32 detour
    assert re.search(r"arith.cmpf uno", text) and "math.copysign" in text
