"""A kernel whose machine code still spills after the compiler's own GRF choice (a
spilling build is retried in the large register file) gets a located warning naming the
spill size and what to change.  The instrument is the offline compiler's spill report
(zeinfo ``spill_size``), target arc (dg2-g10, already 256 GRFs).

The kernel is a user's flash attention written per subgroup from tutorial 5 (D = 64):
16 x 32 query x key blocks spill on arc (measured with IGC 2.40: 11776 B; 16 x 16: 8896 B;
8 x 32: 2816 B), while ops.attention's arc tiles, 8 x 16, do not spill."""
from __future__ import annotations

import warnings

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationWarning, RegisterSpillWarning
from xetile_dsl.ops import configs
from xetile_dsl.targets import get_target

SIG = {"q": "f16[:,:]", "k": "f16[:,:]", "v": "f16[:,:]", "o": "f16[:,:]", "N": "i32", "qk_scale": "f32"}


@xd.jit
def user_attention(q, k, v, o, N, qk_scale, D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr):
    row = xt.program_id(0) * BM
    qv = xt.load_tile(xt.init_tile(q, [row, 0], [BM, D]))
    tk = xt.init_tile(k, [0, 0], [D, BN], order=(0, 1))
    tv = xt.init_tile(v, [0, 0], [BN, D])
    m = xt.full([BM, 1], -1e30, xt.float32)
    l = xt.zeros([BM, 1], xt.float32)
    acc = xt.zeros([BM, D], xt.float32)
    for start in range(0, N, BN):
        s = xt.tile_mma(qv, xt.load_tile(tk), xt.zeros([BM, BN], xt.float32)) * qk_scale
        s = xt.where(xt.arange(0, BN) + start < N, s, float("-inf"))
        m_new = xt.maximum(m, xt.max(s, axis=1))
        p = xt.exp2(s - m_new)
        alpha = xt.exp2(m - m_new)
        l = l * alpha + xt.sum(p, axis=1)
        acc = xt.tile_mma(xt.astype(p, xt.float16), xt.load_tile(tv), acc * alpha)
        m = m_new
        tk = xt.update_tile_offset(tk, 0, BN)
        tv = xt.update_tile_offset(tv, BN, 0)
    xt.store_tile(xt.astype(acc / l, xt.float16), xt.init_tile(o, [row, 0], [BM, D]))


def _compile(bm, bn):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        kernel = xd.compile(user_attention, SIG, {"D": 64, "BM": bm, "BN": bn}, target="arc")
    spilled = kernel.asm["zebin"].spill_size("user_attention")
    return kernel, spilled, [w for w in seen if issubclass(w.category, CompilationWarning)]


def test_spilling_user_attention_warns_at_its_def_with_the_spill_and_the_fix(ocloc_path):
    kernel, spilled, found = _compile(16, 32)
    assert spilled > 0
    assert get_target("arc").large_grf_option in kernel.abi.extra["build_options"].split()
    assert len(found) == 1, [str(w.message) for w in found]
    w = found[0]
    assert w.category is RegisterSpillWarning
    assert w.filename == __file__ and w.lineno == user_attention.fn.__code__.co_firstlineno + 1   # the def line
    text = str(w.message)
    assert f"spills {spilled} bytes" in text and "smaller BM or BN" in text and "256 GRFs = 8 KiB" in text


def test_ops_attention_tiles_do_not_spill_nor_warn(ocloc_path):
    _, spilled, found = _compile(*configs.attention_tiles("arc", 64))
    assert spilled == 0 and found == []
