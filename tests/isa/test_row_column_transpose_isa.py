"""The causal-mask index ``j - i`` in PVC machine code.  A computed ``[1, 32]`` row
(``arange(0, 32) + first``) is staged in SLM (two SIMD16 stores of 16 elements) and read back transposed
as an ``[32, 1]`` column that every lane holds whole.  The replicated read is the same for
all lanes, so IGC makes it uniform: four one-lane ``d32x8t`` loads of 8 elements each (N/8
messages), not a per-lane gather of all 32 elements in every lane.  A constant row
(``arange(0, 32)`` itself) is transposed by the frontend into a constant column: no SLM."""
from __future__ import annotations

import re

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.tools import ocloc

N = 32


@xd.jit
def causal_index(c, first, BM: xt.constexpr):
    i = xt.transpose(xt.arange(0, BM) + first)
    j = xt.arange(0, 16)
    xt.store_tile(j - i, xt.init_tile(c, [0, 0], [BM, 16]))


@xd.jit
def constant_causal_index(c, BM: xt.constexpr):
    i = xt.transpose(xt.arange(0, BM))
    j = xt.arange(0, 16)
    xt.store_tile(j - i, xt.init_tile(c, [0, 0], [BM, 16]))


def test_transposed_row_is_read_once_per_subgroup(ocloc_path):
    compiled = xd.compile(causal_index, {"c": "i32[:,:]", "first": "i32"}, {"BM": N}, target="pvc")
    isa = compiled.asm["isa"]
    assert compiled.report().spill_bytes == 0
    assert ocloc.count(isa, r"\bstore\.slm\.d32\.a32\b") == N // 16
    assert ocloc.count(isa, r"\bload\.slm\b") == N // 8
    assert ocloc.count(isa, r"send\.slm \(1\|M0\).*\bload\.slm\.d32x8t\b") == N // 8
    assert not re.search(r"send\.slm \(16\|M0\).*\bload\.slm\b", isa)


def test_transposed_constant_row_needs_no_exchange(ocloc_path):
    """Before the fold: the same two SLM stores and four SLM loads as a computed row."""
    compiled = xd.compile(constant_causal_index, {"c": "i32[:,:]"}, {"BM": N}, target="pvc")
    assert "xetile.tile_transpose" not in compiled.asm["xetile"]
    assert ocloc.count(compiled.asm["isa"], r"\.slm\b") == 0
    assert compiled.report().spill_bytes == 0
