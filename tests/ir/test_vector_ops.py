"""vector.shape_cast / transpose / multi_reduction / broadcast / strided slices: the shape and layout
rules, and their meaning (interpreted, against numpy)."""
from __future__ import annotations

import numpy as np
import pytest
from xdsl.utils.exceptions import ParseError, VerifyException

from xetile_dsl.dialects import parse_module
from xetile_dsl.interpreter import interpret

from .helpers import roundtrip, wrap


def _kernel(in_shape: str, out_shape: str, body: str) -> str:
    """Load x (in_shape, f32), run ``body`` on %v giving %r (out_shape), store into y."""
    return f"""func.func @k(%x: memref<{in_shape}xf32>, %y: memref<{out_shape}xf32>) attributes {{xetile.kernel = "pvc"}} {{
  %c0 = arith.constant 0 : index
  %t = xetile.init_tile %x[%c0, %c0] : memref<{in_shape}xf32> -> !xetile.tile<{in_shape}xf32>
  %v = xetile.load_tile %t : !xetile.tile<{in_shape}xf32> -> vector<{in_shape}xf32>
{body}
  %o = xetile.init_tile %y[%c0, %c0] : memref<{out_shape}xf32> -> !xetile.tile<{out_shape}xf32>
  xetile.store_tile %r, %o : vector<{out_shape}xf32>, !xetile.tile<{out_shape}xf32>
  func.return
}}
"""


def _run(text: str, x: np.ndarray, out_shape) -> np.ndarray:
    module, _ = roundtrip(text)
    y = np.zeros(out_shape, np.float32)
    interpret(module, (1,), [x, y])
    return y


X = np.arange(16 * 32, dtype=np.float32).reshape(16, 32) / 7.0


def test_shape_cast_keeps_row_major_order():
    body = """  %s = vector.shape_cast %v : vector<16x32xf32> to vector<2x8x32xf32>
  %r = vector.shape_cast %s : vector<2x8x32xf32> to vector<32x16xf32>"""
    np.testing.assert_array_equal(_run(_kernel("16x32", "32x16", body), X, (32, 16)), X.reshape(32, 16))


def test_transpose():
    body = "  %r = vector.transpose %v, [1, 0] : vector<16x32xf32> to vector<32x16xf32>"
    np.testing.assert_array_equal(_run(_kernel("16x32", "32x16", body), X, (32, 16)), X.T)


def test_strided_slices_cut_and_join_row_blocks():
    """The register transpose's joins and cuts: rows 8..15 of a 16x32 value moved on top."""
    body = """  %e = vector.extract_strided_slice %v {offsets = [8, 0], sizes = [8, 32], strides = [1, 1]} : vector<16x32xf32> to vector<8x32xf32>
  %r = vector.insert_strided_slice %e, %v {offsets = [0, 0], strides = [1, 1]} : vector<8x32xf32> into vector<16x32xf32>"""
    np.testing.assert_array_equal(_run(_kernel("16x32", "16x32", body), X, (16, 32)), np.concatenate([X[8:], X[8:]]))


@pytest.mark.parametrize("kind, ref", [("add", np.sum), ("maximumf", np.max), ("mul", np.prod)])
def test_multi_reduction_with_accumulator_then_broadcast(kind, ref):
    body = f"""  %acc = arith.constant dense<2.0> : vector<16xf32>
  %m = vector.multi_reduction <{kind}>, %v, %acc [1] : vector<16x32xf32> to vector<16xf32>
  %c = vector.shape_cast %m : vector<16xf32> to vector<16x1xf32>
  %r = vector.broadcast %c : vector<16x1xf32> to vector<16x32xf32>"""
    x = (X / 300.0 + 0.9).astype(np.float32)
    want = ref(np.concatenate([x, np.full((16, 1), 2.0, np.float32)], axis=1).astype(np.float64), axis=1)
    got = _run(_kernel("16x32", "16x32", body), x, (16, 32))
    np.testing.assert_allclose(got, np.broadcast_to(want[:, None], (16, 32)).astype(np.float32), rtol=1e-6)


def test_bitcast_reinterprets_the_innermost_dim():
    body = """  %i = vector.bitcast %v : vector<16x32xf32> to vector<16x32xi32>
  %h = vector.bitcast %i : vector<16x32xi32> to vector<16x64xi16>
  %r = vector.bitcast %h : vector<16x64xi16> to vector<16x32xf32>"""
    np.testing.assert_array_equal(_run(_kernel("16x32", "16x32", body), X, (16, 32)), X)


def test_bitcast_values():
    body = """  %i = vector.bitcast %v : vector<16x32xf32> to vector<16x32xi32>
  %r = arith.sitofp %i : vector<16x32xi32> to vector<16x32xf32>"""
    x = np.full((16, 32), 1.0, np.float32)  # 1.0f is 0x3f800000
    np.testing.assert_array_equal(_run(_kernel("16x32", "16x32", body), x, (16, 32)),
                                  np.full((16, 32), float(0x3F800000), np.float32))


def test_multi_reduction_of_every_dim_gives_a_scalar():
    body = """  %acc = arith.constant 1.0 : f32
  %m = vector.multi_reduction <add>, %v, %acc [0, 1] : vector<16x32xf32> to f32
  %r = vector.broadcast %m : f32 to vector<16x32xf32>"""
    got = _run(_kernel("16x32", "16x32", body), X, (16, 32))
    np.testing.assert_allclose(got, np.full((16, 32), X.astype(np.float64).sum() + 1.0, np.float32), rtol=1e-6)


# ----------------------------------------------------------------------------- invalid
L2 = "#xegpu.layout<sg_layout = [8, 4], sg_data = [32, 32], lane_layout = [1, 16], lane_data = [1, 1], order = [1, 0]>"
L2T = "#xegpu.layout<sg_layout = [4, 8], sg_data = [32, 32], lane_layout = [16, 1], lane_data = [1, 1], order = [0, 1]>"
L2T_LANES_KEPT = "#xegpu.layout<sg_layout = [4, 8], sg_data = [32, 32], lane_layout = [1, 16], lane_data = [1, 1], order = [0, 1]>"
ARGS = "%a: vector<256x128xf32>, %acc: vector<256xf32>, %acc0: vector<128xf32>, %s: vector<128xf32>"

INVALID = {
    "shape_cast count": ("%r = vector.shape_cast %a : vector<256x128xf32> to vector<256x64xf32>",
                         "element count must be preserved"),
    "shape_cast element": ("%r = vector.shape_cast %a : vector<256x128xf32> to vector<256x128xf16>",
                           "element types differ"),
    "transpose not a permutation": ("%r = vector.transpose %a, [0, 0] : vector<256x128xf32> to vector<128x256xf32>",
                                    "must be a permutation"),
    "transpose result shape": ("%r = vector.transpose %a, [1, 0] : vector<256x128xf32> to vector<256x128xf32>",
                               "permuted by [1, 0] is vector<128x256xf32>"),
    "transpose layout not swapped": (
        f"%r = vector.transpose %a, [1, 0] {{layout_operand_0 = {L2}, layout_result_0 = {L2T_LANES_KEPT}}} "
        ": vector<256x128xf32> to vector<128x256xf32>", "dimensions permuted"),
    "reduction result shape": ("%r = vector.multi_reduction <add>, %a, %acc0 [1] : vector<256x128xf32> to vector<128xf32>",
                               "gives vector<256xf32>"),
    "reduction dims repeated": ("%r = vector.multi_reduction <add>, %a, %acc [1, 1] : vector<256x128xf32> to vector<256xf32>",
                                "must be distinct dims"),
    "reduction dim out of range": ("%r = vector.multi_reduction <add>, %a, %acc [2] : vector<256x128xf32> to vector<256xf32>",
                                   "must be distinct dims"),
    "reduction int kind on float": ("%r = vector.multi_reduction <xor>, %a, %acc [1] : vector<256x128xf32> to vector<256xf32>",
                                    "is not defined on f32"),
    "reduction slice dims": (f"%r = vector.multi_reduction <add>, %a, %acc0 {{layout_result_0 = #xegpu.slice<{L2}, dims = [1]>}} [0] "
                             ": vector<256x128xf32> to vector<128xf32>", "must slice the reduced dims [0]"),
    "reduction slice parent": (
        f"%r = vector.multi_reduction <add>, %a, %acc {{layout_operand_0 = {L2}, "
        f"layout_result_0 = #xegpu.slice<#xegpu.layout<sg_layout = [32, 1], sg_data = [8, 128]>, dims = [1]>}} [1] "
        ": vector<256x128xf32> to vector<256xf32>", "must be a slice of the source layout"),
    "reduction plain result layout": (
        "%r = vector.multi_reduction <add>, %a, %acc {layout_result_0 = #xegpu.layout<sg_layout = [32], sg_data = [8]>} [1] "
        ": vector<256x128xf32> to vector<256xf32>", "must be #xegpu.slice"),
    "reduction accumulator layout": (
        f"%r = vector.multi_reduction <add>, %a, %acc {{layout_result_0 = #xegpu.slice<{L2}, dims = [1]>, "
        f"layout_operand_1 = #xegpu.slice<{L2T}, dims = [1]>}} [1] : vector<256x128xf32> to vector<256xf32>",
        "accumulator layout"),
    "layout rank": (f"%r = vector.shape_cast %a {{layout_result_0 = {L2}}} : vector<256x128xf32> to vector<32768xf32>",
                    "has rank 2 but describes vector<32768xf32>"),
    "layout vs shape": (f"%r = vector.shape_cast %a {{layout_result_0 = {L2}}} : vector<256x128xf32> to vector<128x256xf32>",
                        "must be a multiple of sg_layout*sg_data"),
    "layout not a layout": ("%r = vector.shape_cast %a {layout_result_0 = 3 : i32} : vector<256x128xf32> to vector<128x256xf32>",
                            "must be #xegpu.layout, #xegpu.slice or #xegpu.sg_map"),
    "layout of no operand": (f"%r = vector.shape_cast %a {{layout_operand_1 = {L2}}} : vector<256x128xf32> to vector<128x256xf32>",
                             "names no value"),
    "shape_cast subgroups": (
        f"%r = vector.shape_cast %a {{layout_operand_0 = {L2}, "
        "layout_result_0 = #xegpu.layout<sg_layout = [8, 1, 2], sg_data = [32, 1, 64]>} "
        ": vector<256x128xf32> to vector<256x1x128xf32>", "keep the subgroup count"),
    "broadcast shape": ("%r = vector.broadcast %s : vector<128xf32> to vector<128x64xf32>", "does not broadcast"),
    "broadcast slice dims": (
        f"%r = vector.broadcast %s {{layout_operand_0 = #xegpu.slice<{L2}, dims = [1]>, layout_result_0 = {L2}}} "
        ": vector<128xf32> to vector<256x128xf32>", "must slice the added leading dims [0]"),
    "broadcast slice parent": (
        f"%r = vector.broadcast %s {{layout_operand_0 = #xegpu.slice<{L2T}, dims = [0]>, layout_result_0 = {L2}}} "
        ": vector<128xf32> to vector<256x128xf32>", "must be a slice of the result layout"),
    "slice dims repeated": (f"%r = vector.broadcast %s {{layout_operand_0 = #xegpu.slice<{L2}, dims = [0, 0]>}} "
                            ": vector<128xf32> to vector<256x128xf32>", "must be distinct dims"),
    "nested slice dims": (f"%r = vector.broadcast %s {{layout_operand_0 = #xegpu.slice<#xegpu.slice<{L2}, dims = [1]>, "
                          "dims = [1]>} : vector<128xf32> to vector<256x128xf32>", "dims [1] must be distinct dims of the rank-1"),
    "transpose sg_map not swapped": (
        "%r = vector.transpose %a, [1, 0] {layout_operand_0 = #xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 1]>, "
        "layout_result_0 = #xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 1]>} : vector<256x128xf32> to "
        "vector<128x256xf32>", "wi_layout = [16, 1]"),
    "sg_map on a 3-D vector": ("%r = vector.shape_cast %a {layout_result_0 = #xegpu.sg_map<wi_layout = [1, 16], "
                               "wi_data = [1, 1]>} : vector<256x128xf32> to vector<2x128x128xf32>",
                               "describes 1-D or 2-D vectors"),
    "sg_map does not divide": ("%r = vector.shape_cast %a {layout_result_0 = #xegpu.sg_map<wi_layout = [1, 16], "
                               "wi_data = [1, 1]>} : vector<256x128xf32> to vector<4096x8xf32>", "does not divide"),
    "bitcast outer dim": ("%r = vector.bitcast %a : vector<256x128xf32> to vector<512x128xf16>",
                          "may change only the innermost dimension"),
    "bitcast bits": ("%r = vector.bitcast %a : vector<256x128xf32> to vector<256x128xf16>", "equal bitwidth"),
    "broadcast dim list (RFC)": ("%r = vector.broadcast %s [1] : vector<128xf32> to vector<128x128xf32>",
                                 "takes no dimension list"),
    "three unnamed layouts": (f"%r = vector.shape_cast %a {{{L2} {L2} {L2}}} : vector<256x128xf32> to vector<256x128xf32>",
                              "3 unnamed attribute(s)"),
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid(name: str) -> None:
    line, message = INVALID[name]
    with pytest.raises((VerifyException, ParseError)) as info:
        parse_module(wrap(ARGS, "  " + line)).verify()
    assert message in str(info.value), str(info.value)


def test_unnamed_layout_goes_to_the_value_of_its_rank():
    """One unnamed layout: the result's, unless only the source has its rank; two: source, result."""
    text = wrap(ARGS, f"""  %c = vector.shape_cast %s {{#xegpu.slice<{L2}, dims = [1]>}} : vector<128xf32> to vector<128x1xf32>
  %t = vector.transpose %a {{{L2} {L2T}}} : vector<256x128xf32> into vector<128x256xf32>""")
    module, printed = roundtrip(text)
    ops = [op for op in module.walk() if op.name in ("vector.shape_cast", "vector.transpose")]
    assert set(ops[0].attributes) == {"layout_operand_0"}
    assert ops[1].attributes["layout_operand_0"] != ops[1].attributes["layout_result_0"]
    assert "vector.transpose %a, [1, 0] {layout_operand_0 = " in printed


def test_remf_is_c_fmod_on_vectors():
    """``arith.remf`` (defined in dialects/_arith_vector.py: xDSL lacks it) parses, prints
    back and means C's fmod: exact, the sign of the dividend."""
    body = """  %m = arith.constant dense<-2.5> : vector<16x32xf32>
  %r = arith.remf %v, %m : vector<16x32xf32>"""
    x = X - 30.0
    np.testing.assert_array_equal(_run(_kernel("16x32", "16x32", body), x, (16, 32)), np.fmod(x, np.float32(-2.5)))


def test_remf_refuses_integers():
    text = _kernel("16x32", "16x32", """  %i = arith.constant dense<3> : vector<16x32xi32>
  %q = arith.remf %i, %i : vector<16x32xi32>
  %r = arith.addf %v, %v : vector<16x32xf32>""")
    with pytest.raises((ParseError, VerifyException)):
        roundtrip(text)
