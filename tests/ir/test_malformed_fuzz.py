"""Malformed files: deleting, doubling or replacing one token of a valid snippet gives either a
valid module, a VerifyException, or a ParseError located at ``file:line:column`` -- never
another exception from inside xDSL or our parsers."""
from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from xetile_dsl.dialects import parse_module

SNIPPETS = {p.name: p.read_text() for folder in ("rfc_snippets", "upstream_forms")
            for p in sorted((Path(__file__).parent / folder).glob("*.mlir"))}
SNIPPETS["gpu_module"] = """gpu.module @m {
  gpu.func @k(%src: memref<128x128xf32>, %v: vector<256x128xf32>, %acc: vector<256xf32>) kernel {
    %t = xegpu.create_nd_tdesc %src[0, 0] : memref<128x128xf32> -> !xegpu.tensor_desc<8x16xf32>
    %r = vector.multi_reduction <add>, %v, %acc {layout_result_0 = #xegpu.slice<#xegpu.layout<sg_layout = [32, 1], sg_data = [8, 128]>, dims = [1]>} [1] : vector<256x128xf32> to vector<256xf32>
    %s = vector.shape_cast %v : vector<256x128xf32> to vector<128x256xf32>
    %p = vector.transpose %s, [1, 0] : vector<128x256xf32> to vector<256x128xf32>
    gpu.return
  }
}
"""
TOKEN = re.compile(r'%[\w#:]+|#[\w.]+|![\w.]+|"[^"]*"|\w+|->|[^\s\w]')
LOCATED = re.compile(r"<text>:\d+:\d+")


@st.composite
def mutations(draw):
    """(snippet name, mutated text): one token deleted, doubled, or replaced by another of the file's."""
    name = draw(st.sampled_from(sorted(SNIPPETS)))
    text = SNIPPETS[name]
    tokens = list(TOKEN.finditer(text))
    tok = tokens[draw(st.integers(0, len(tokens) - 1))]
    other = tokens[draw(st.integers(0, len(tokens) - 1))].group()
    replacement = draw(st.sampled_from(["", f"{tok.group()} {tok.group()}", other]))
    return name, text[:tok.start()] + replacement + text[tok.end():]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations())
def test_one_token_mutation_is_a_located_error_or_valid(case) -> None:
    name, text = case
    try:
        module = parse_module(text)
    except ParseError as exc:
        assert LOCATED.search(str(exc)), f"{name}: unlocated parse error: {exc}"
        return
    try:
        module.verify()
    except (VerifyException, DiagnosticException):
        pass


def test_zero_sg_map_is_located() -> None:
    """Found by the fuzzer: an sg_map with a zero entry divided by zero when checked."""
    text = ("#m = #xegpu.sg_map<wi_layout = [1, 0], wi_data = [1, 1]>\n"
            "func.func @f(%v: vector<16x16xf32>) {\n"
            "  %r = vector.shape_cast %v {layout_result_0 = #m} : vector<16x16xf32> to vector<16x16xf32>\n"
            "  func.return\n}\n")
    try:
        parse_module(text).verify()
    except ParseError as exc:
        assert LOCATED.search(str(exc)) and "must be positive" in str(exc)
    else:
        raise AssertionError("a zero sg_map was accepted")


def test_xdsl_internal_error_is_located_at_the_op() -> None:
    """Found by the fuzzer: xDSL's dense parser raises ValueError for an i1 out of range."""
    text = "func.func @f() {\n  %m = arith.constant dense<14> : vector<4xi1>\n  func.return\n}\n"
    try:
        parse_module(text)
    except ParseError as exc:
        assert "<text>:2:3" in str(exc) and "out of range" in str(exc)
    else:
        raise AssertionError("dense<14> : vector<4xi1> parsed")


def test_known_crashers_are_located() -> None:
    """Mutations the fuzzer found: a scattered load without its result type."""
    text = ("func.func @f(%d: !xegpu.tensor_desc<16xf32, #xegpu.scatter_tdesc_attr<>>, %m: vector<16xi1>) {\n"
            "  %v = xegpu.load %d, %m : !xegpu.tensor_desc<16xf32, #xegpu.scatter_tdesc_attr<>>, vector<16xi1>\n"
            "  func.return\n}\n")
    try:
        parse_module(text)
    except ParseError as exc:
        assert LOCATED.search(str(exc)) and "needs its result type" in str(exc)
    else:
        raise AssertionError("a load without a result type parsed")
