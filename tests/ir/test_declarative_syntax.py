"""Ops whose syntax moved to xDSL's assembly_format or to shared helpers print
exactly the canonical text they printed before (printed IR is cached and compared), and
the table-built arith casts keep each cast's own element rule."""
from __future__ import annotations

import pytest
from xdsl.utils.exceptions import ParseError, VerifyException

from xetile_dsl.dialects import parse_module

from .helpers import roundtrip, wrap

_LANE_OPS = [
    "%t = xegpu.lane_transpose %x : vector<8x1xf16> -> vector<8x1xf16>",
    "%a = xegpu.a_from_c %x, %y {note = 1 : i32} : vector<8x1xf16>, vector<8x1xf16> -> vector<8x2xf16>",
]


@pytest.mark.parametrize("line", _LANE_OPS)
def test_assembly_format_ops_print_their_canonical_line(line: str) -> None:
    _, printed = roundtrip(wrap("%x: vector<8x1xf16>, %y: vector<8x1xf16>", "  " + line))
    assert "    " + line + "\n" in printed


def test_lane_transpose_result_must_equal_source() -> None:
    """Rejected either way (the custom parser refused it, the declarative one leaves it to
    the verifier), with the same explanation."""
    text = wrap("%x: vector<8x1xf16>", "  %t = xegpu.lane_transpose %x : vector<8x1xf16> -> vector<8x1xf32>")
    with pytest.raises((ParseError, VerifyException), match="result type must be the source type"):
        parse_module(text).verify()


_CASTS = [
    ("arith.extsi", "vector<16xi8>", "vector<16xi32>", True),
    ("arith.extsi", "vector<16xi32>", "vector<16xi8>", False),   # not wider
    ("arith.trunci", "vector<16xi32>", "vector<16xi8>", True),
    ("arith.trunci", "vector<16xi8>", "vector<16xi32>", False),  # not narrower
    ("arith.sitofp", "vector<16xi32>", "vector<16xf32>", True),
    ("arith.fptoui", "vector<16xi32>", "vector<16xf32>", False),  # input must be a float
]


@pytest.mark.parametrize("op,src,dst,ok", _CASTS)
def test_table_built_casts_keep_their_rules(op: str, src: str, dst: str, ok: bool) -> None:
    line = f"%r = {op} %x : {src} to {dst}"
    text = wrap(f"%x: {src}", "  " + line)
    if ok:
        _, printed = roundtrip(text)
        assert "    " + line + "\n" in printed
    else:
        with pytest.raises(VerifyException, match=op):
            parse_module(text).verify()
