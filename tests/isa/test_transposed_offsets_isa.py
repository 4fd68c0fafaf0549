"""Operand A stored K x M, read transposed at a constant row offset ``M0``, compiled by
Intel's offline compiler: the 32-bit transposed 2D block read (``d32t``) addresses whole
dwords, so it serves only offsets that start a dword (even for f16, multiples of 4 for
int8), and its payload's block X (field 5, in dwords) is ``M0 / 2`` -- the block starts at
row ``M0`` of A, not at the row before.  Other offsets are gathered per lane (and right:
tests/e2e/test_transposed_offsets.py)."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.tools import ocloc

TARGETS = ["pvc", "bmg"]


@xd.jit
def at_gemm_m0(at, b, c, K, M0: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr,
               ACC: xt.constexpr):
    acc = xt.zeros([BM, BN], ACC)
    ta = xt.init_tile(at, [M0, 0], [BM, BK], order=(0, 1))
    tb = xt.init_tile(b, [0, 0], [BK, BN])
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [BM, BN]))


def _isa(target, dtype, m0):
    acc, c = (xt.int32, "i32") if dtype == "i8" else (xt.float32, "f32")
    sig = {"at": f"{dtype}[:,:]", "b": f"{dtype}[:,:]", "c": f"{c}[:,:]", "K": "i32"}
    consts = {"M0": m0, "BM": 8, "BN": 16, "BK": 32 if dtype == "i8" else 16, "ACC": acc}
    kernel = xd.compile(at_gemm_m0, sig, consts, target=target)
    assert ocloc.check_isa(kernel.asm["zebin"], "at_gemm_m0", expect_dpas=True) == []
    return kernel.asm["isa"].splitlines()


_SEND_D32T = re.compile(r"\bsend\.ugm\b.*\s(r\d+)\s+null:0.*load_block2d\.ugm\.d32t\b")


def _d32t_block_x(lines) -> list[int]:
    """Block X (payload field 5) that each ``d32t`` send's payload was last given."""
    xs = []
    for i, line in enumerate(lines):
        m = _SEND_D32T.search(line)
        if not m:
            continue
        field5 = re.compile(rf"\bmov \((1|2)\|M0\)\s+{m.group(1)}\.5<1>:u?d\s+(\d+):u?w\b")
        x = next((int(f.group(2)) for f in (field5.search(p) for p in reversed(lines[:i])) if f), None)
        xs.append(x)
    return xs


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("m0", [0, 1, 2, 3, 6])
def test_f16_block_starts_at_row_m0(target, m0, ocloc_path):
    """Even (0, 2 and 4k+2: 6) offsets: one d32t message whose block X is M0/2 dwords;
    odd: no d32t (its block would start at row M0 - 1)."""
    xs = _d32t_block_x(_isa(target, "f16", m0))
    assert xs == ([m0 // 2] if m0 % 2 == 0 else []), xs


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("m0", [0, 1, 2, 4])
def test_i8_pairs_only_at_dword_offsets(target, m0, ocloc_path):
    """int8 operand A (two d32t reads of the row parities): only where M0 is a multiple of 4."""
    xs = _d32t_block_x(_isa(target, "i8", m0))
    assert len(xs) == (2 if m0 % 4 == 0 else 0), xs
