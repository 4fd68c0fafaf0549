"""The IR of fp8 code: conversions are one arith.extf / arith.truncf on the fp8 vector
type (saturation a NaN-propagating clamp before it), fp8 tile_mma operands become f16
first; every module verifies and round-trips through the printer and parser."""
from __future__ import annotations

import re

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.compiler import to_xetile
from xetile_dsl.dialects import parse_module, print_module
from xetile_dsl.kernels.matmul import matmul_kernel


@xd.jit
def roundtrip(x, q, y, SAT: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [16, 32]))
    f8 = xt.astype(v, xt.float8_e5m2, saturate=SAT)
    xt.store_tile(f8, xt.init_tile(q, [0, 0], [16, 32]))
    xt.store_tile(xt.astype(f8, xt.bfloat16), xt.init_tile(y, [0, 0], [16, 32]))


def _ir(fn, sig, constants) -> str:
    module = to_xetile(fn, sig, constants, "pvc")
    module.verify()
    text = print_module(module)
    assert print_module(parse_module(text)) == text
    return text


def test_conversions_are_one_op_each_way():
    sig = {"x": "f16[:,:]", "q": "f8e5m2[:,:]", "y": "bf16[:,:]"}
    text = _ir(roundtrip, sig, {"SAT": False})
    assert re.search(r"arith.truncf %\w+ : vector<16x32xf16> to vector<16x32xf8E5M2>", text)
    assert re.search(r"arith.extf %\w+ : vector<16x32xf8E5M2> to vector<16x32xbf16>", text)
    assert "maximumf" not in text
    saturated = _ir(roundtrip, sig, {"SAT": True})
    assert re.search(r"arith.maximumf.*arith.minimumf.*arith.truncf", saturated, re.S)
    assert "dense<5.734400e+04>" in saturated and "dense<-5.734400e+04>" in saturated


def test_fp8_mma_operands_become_f16():
    sig = {"a": "f8e4m3fn[:,:]", "b": "f8e5m2[:,:]", "c": "f32[:,:]", "K": "i32"}
    text = _ir(matmul_kernel, sig, {"BM": 32, "BN": 32, "BK": 32})
    assert re.search(r"arith.extf %\w+ : vector<32x32xf8E4M3FN> to vector<32x32xf16>", text)
    assert re.search(r"arith.extf %\w+ : vector<32x32xf8E5M2> to vector<32x32xf16>", text)
    assert re.search(r"xetile.tile_mma %\w+, %\w+, %\w+ : vector<32x32xf16>, vector<32x32xf16>", text)
