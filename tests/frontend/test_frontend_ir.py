"""The frontend emits the expected XeTile/arith/math/scf ops for each language construct;
every module verifies and round-trips through the MLIR printer and parser."""
from __future__ import annotations

import re

import pytest

from xetile_dsl.dialects import parse_module, print_module
from xetile_dsl.compiler import to_xetile

from . import ir_kernels as k

F = "f32[:,:]"


def _ir(fn, sig, constants=None, target="pvc") -> str:
    module = to_xetile(fn, sig, constants or {}, target)
    module.verify()
    text = print_module(module)
    assert print_module(parse_module(text)) == text  # printable and parseable
    return text


def _has(text: str, *patterns: str) -> None:
    for p in patterns:
        assert re.search(p, text), f"{p!r} not in:\n{text}"


def test_gemm_bias_relu_bf16_epilogue():
    text = _ir(k.epilogue, {"a": "f16[:,:]", "b": "f16[:,:]", "bias": F, "c": "bf16[:,:]", "K": "i32"},
               dict(BM=32, BN=32, BK=32))
    _has(text, r"scf.for .* iter_args", r"xetile.tile_mma .* -> vector<32x32xf32>",
         r"xetile.tile_broadcast %\w+ \[0\] : vector<1x32xf32> -> vector<32x32xf32>",
         r"arith.maximumf .* : vector<32x32xf32>", r"arith.constant dense<2.000000e\+00>",
         r"arith.truncf %\w+ : vector<32x32xf32> to vector<32x32xbf16>",
         r"xetile.store_tile %\w+, %\w+ : vector<32x32xbf16>")
    assert text.count("gpu.block_id") == 2  # each program_id once; arguments visited once


def test_row_softmax_reduces_and_broadcasts_by_shape():
    text = _ir(k.softmax, {"x": F, "y": F}, dict(BM=8, BN=32))
    _has(text, r"xetile.tile_reduce <maximumf> %\w+ \[1\] : vector<8x32xf32> -> vector<8x1xf32>",
         r"xetile.tile_broadcast %\w+ \[1\] : vector<8x1xf32> -> vector<8x32xf32>", r"math.exp %\w+ : vector<8x32xf32>",
         r"xetile.tile_reduce <add> .* -> vector<8x1xf32>", r"arith.divf .* : vector<8x32xf32>")


def test_math_functions_and_scalar_broadcast():
    text = _ir(k.math_ops, {"x": F, "y": F, "n": "f32"})
    for op in ("exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "absf", "fma", "exp"):
        _has(text, rf"math.{op} .*: vector<8x16xf32>")
    _has(text, r"arith.negf", r"vector.broadcast %n : f32 to vector<8x16xf32>", r"arith.minimumf",
         r"arith.cmpf ogt, .* : vector<8x16xf32>", r"arith.select %\w+, %\w+, %\w+ : vector<8x16xi1>, vector<8x16xf32>",
         r"tile_reduce <mul> %\w+ \[0\] .* -> vector<1x16xf32>", r"tile_reduce <minimumf> %\w+ \[1\]")


def test_integer_operators_argmax_and_arange():
    text = _ir(k.int_ops, {"x": "i32[:,:]", "y": "i32[:,:]", "n": "i32"})
    for op in ("floordivsi", "remsi", "andi", "ori", "xori", "muli", "subi", "maxsi"):
        _has(text, rf"arith.{op} .*: vector<8x16xi32>")
    _has(text, r"math.absi", r"arith.cmpi sge, .* : vector<8x16xi32>", r"arith.cmpi ne,",
         r"arith.andi %\w+, %\w+ : vector<8x16xi1>", r"arith.constant dense<-1> : vector<8x16xi32>",
         r"tile_reduce <maxsi> %\w+ \[1\]", r"tile_reduce <minsi> %\w+ \[1\] : vector<8x16xi32> -> vector<8x1xi32>",
         r"arith.constant dense<\[\[0, 1, 2, .*15\]\]> : vector<1x16xi32>")


def test_casts_between_all_element_types():
    text = _ir(k.casts, {"x": "f16[:,:]", "y": "i8[:,:]", "z": "u8[:,:]"})
    _has(text, r"arith.extf %\w+ : vector<8x32xf16> to vector<8x32xf32>", r"to vector<8x32xbf16>",
         r"arith.fptosi .* to vector<8x32xi32>", r"arith.trunci .* to vector<8x32xi8>",
         r"arith.fptoui .* to vector<8x32xui8>")


def test_while_if_static_range_ternary_and_early_return():
    text = _ir(k.control, {"x": F, "y": F, "n": "i32", "m": "i32"})
    _has(text, r"scf.while \(%acc_\d+ = %\w+, %i_\d+ = %\w+\)", r"scf.condition",
         r"scf.if %\w+ -> \(vector<8x16xf32>\)", r"arith.select %\w+, %\w+, %\w+ : i1, index")
    assert text.count("dense<1.000000e+00>") >= 2 and "dense<2.000000e+00>" in text  # unrolled j = 1, 2
    # early return: the store only happens in the else branch of the last scf.if
    tail = text[text.rindex("scf.if"):]
    assert "} else {" in tail and "xetile.store_tile" in tail.split("} else {")[1]


def test_jit_helper_is_inlined_with_its_constexpr():
    text = _ir(k.calls, {"x": F, "y": F})
    assert "func.call" not in text and text.count("func.func") == 1
    _has(text, r"arith.constant dense<3.000000e\+00>", r"arith.mulf", r"arith.addf")
    assert "scf.if" not in text  # `if alpha == 1` folded on the constexpr


def test_transpose_reduce_broadcast_and_atomic():
    text = _ir(k.shapes_and_atomics, {"x": F, "y": F, "z": F})
    _has(text, r"xetile.tile_transpose %\w+ \[1, 0\] : vector<16x32xf32> -> vector<32x16xf32>",
         r"xetile.tile_reduce <maximumf> %\w+ \[0\]", r"xetile.atomic_rmw addf %\w+, %\w+ : vector<16x32xf32>")


def test_scattered_tiles_gather_and_scatter():
    text = _ir(k.scatter, {"x": F, "y": F, "n": "i32"})
    _has(text, r"arith.index_cast %\w+ : vector<1x16xi64> to vector<1x16xindex>",
         r"xetile.init_tile %x, %\w+ : .*, vector<1x16xindex> -> !xetile.tile<1x16xf32, "
         r"#xetile.tile_attr<scattered = true>>", r"xetile.load_gather %\w+, %\w+ : .* vector<1x16xi1>",
         r"xetile.store_scatter")


def test_wg_maps_order_subgroups_and_conv_layout():
    text = _ir(k.layouts, {"a": "f16[:,:]", "bt": "f16[:,:]", "c": F})
    _has(text, r"tile_attr<order = \[0, 1\], wg_map = #xetile.wg_map<sg_layout = \[2, 2\], sg_data = \[16, 16\]>>",
         r"xetile.init_tile %bt\[%\w+, %\w+\], \[%9, %8\], \[%11, %10\]",  # transposed view: swapped extents
         r"xetile.tile_mma %\w+, %\w+ \{wg_map = #xetile.wg_map<sg_layout = \[2, 2\]",
         r"xetile.tile_conv_layout .*wg_map = #xetile.wg_map<sg_layout = \[4, 1\], sg_data = \[8, 32\]>, "
         r"wg_map_source = #xetile.wg_map<sg_layout = \[2, 2\]", r"gpu.subgroup_id", r"gpu.num_subgroups",
         r"gpu.grid_dim")


def test_tile_transpose_takes_result_and_source_wg_maps():
    """RFC Appendix 2.2: ``tile_transpose {#mp_bt #mp_b}`` as keyword maps (result, source)."""
    from xetile_dsl.kernels import gemm_bt_reduce as G

    sig = {"a": "f16[:,:]", "bt": "f16[:,:]", "bcast": "f32[:,:]", "c": F, "res": F, "K": "i32"}
    text = _ir(G.gemm_bt_bcast_reduce_kernel, sig, {"MP_BT_LOAD": G.MP_BT, "PF": 3})
    _has(text, r"xetile.tile_transpose %\w+ \[1, 0\] \{wg_map = #xetile.wg_map<sg_layout = \[8, 4\], "
               r"sg_data = \[32, 64\]>\} : vector<256x32xf16> -> vector<32x256xf16>")
    text = _ir(k.transposed_wg, {"a": F, "c": F})
    _has(text, r"tile_transpose %\w+ \[1, 0\] \{wg_map = #xetile.wg_map<sg_layout = \[1, 4\], sg_data = \[32, 16\]>, "
               r"wg_map_source = #xetile.wg_map<sg_layout = \[4, 1\], sg_data = \[16, 32\]>\}")


def test_tf32_input_precision_is_recorded():
    text = _ir(k.tf32_mma, {"a": F, "b": F, "c": F})
    _has(text, r'xetile.tile_mma .*input_precision = "tf32".* -> vector<8x16xf32>')


@pytest.mark.parametrize("value,spec", [(1, "1"), (32, "d16"), (7, "")])
def test_integer_arguments_specialise_on_one_and_sixteen(value, spec):
    from xetile_dsl.frontend.ast_to_xetile import ArgSpec
    from xetile_dsl.jit import _arg_spec

    assert _arg_spec("n", value) == ArgSpec("scalar", "i32", spec=spec)
    sig = {"x": F, "y": F, "n": ArgSpec("scalar", "i32", spec=spec), "m": "i32"}
    text = _ir(k.control, sig)
    if spec == "1":  # n is the constant 1: `n > m` compares against a constant
        assert "arith.index_cast %n" not in text
    if spec == "d16":
        assert "xetile.divisibility = {n = 16 : i64}" in text


def test_cache_key_covers_specialisation_constexpr_globals_and_callees(monkeypatch):
    from xetile_dsl.frontend.ast_to_xetile import ArgSpec
    from xetile_dsl.frontend.dependencies import collect

    specs = {"n": ArgSpec("scalar", "i32", spec="")}
    key = k.control.cache_key(specs, {}, "cpu-pvc")
    assert k.control.cache_key({"n": ArgSpec("scalar", "i32", spec="d16")}, {}, "cpu-pvc") != key
    assert "read helper_add = jit #1" in collect(k.calls.fn).text
    before = collect(k.epilogue.fn).text
    monkeypatch.setattr(k, "SCALE", k.xt.constexpr(3.0))
    assert collect(k.epilogue.fn).text != before
