"""Coalesced 2D block messages (lowering/rewrites/block_messages.py) and prefetch planning
(lowering/analysis/prefetch_plan.py): which messages the XeGPU conversion emits for the RFC
Appendix 2.1 GEMM, that ARC keeps one access per block, and the planner's choices."""
from __future__ import annotations

import linecache
import re
import warnings

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import PrefetchPlanWarning
from xetile_dsl.kernels.gemm_wg import gemm_prefetch_kernel, gemm_wg_kernel
from xetile_dsl.lowering.rewrites import block_messages
from xetile_dsl.targets import get_target
from tests.lowering.test_lowering_rules import mma_kernel, opt

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
RFC = {"BM": 256, "BN": 256, "BK": 32, "PF": 3}
WG = {"BM": 256, "BN": 256, "BK": 32, "SM": 8, "SN": 4, "PF": 3, "ACC": xt.float32}
A_MSG = "!xegpu.tensor_desc<32x16xf16, #xegpu.block_tdesc_attr<array_length = 2>>"
PF_MSG = "!xegpu.tensor_desc<8x16xf16, #xegpu.block_tdesc_attr<array_length = 2>>"


def _loop(text: str) -> str:
    return text[text.index("scf.for"):]


@pytest.fixture(scope="module")
def rfc_pvc():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrefetchPlanWarning)  # own-piece prefetch maps: nothing to re-plan
        return xd.compile(gemm_prefetch_kernel, SIG, RFC, target="cpu-pvc").asm


def test_rfc_2_1_k_step_is_three_loads_and_two_prefetches(rfc_pvc):
    """A's 32x32 piece: one 32-row read of two 16-wide blocks; B's 32x64: two 32-row VNNI
    reads of two blocks; each 8x32 prefetch slice one message (16 loads, 4 prefetches before)."""
    loop = _loop(rfc_pvc["xegpu"])
    loads = re.findall(r"xegpu\.load_nd %\S+ (\{packed\} )?: (!xegpu\.tensor_desc<[^>]*>>)", loop)
    assert len(loads) == 3
    assert [(bool(p), t) for p, t in loads].count((False, A_MSG)) == 1
    assert [(bool(p), t) for p, t in loads].count((True, A_MSG)) == 2  # B: same shape, VNNI
    assert loop.count("xegpu.prefetch_nd") == 2 and loop.count(PF_MSG) >= 2
    assert loop.count("xegpu.dpas") == 32
    assert loop.count("vector.extract_strided_slice") == 8 + 8  # each 8x16 A and 16x16 B block cut out


def test_rfc_2_1_simt_blocks_are_lane_ranges(rfc_pvc):
    """xegpu-simt: a 64-element A fragment per lane, each block 8 consecutive elements;
    B's 32 VNNI pairs per lane, each block 8 pairs; no shape_cast left."""
    simt = _loop(rfc_pvc["simt"])
    assert "-> vector<64x1xf16>" in simt and "-> vector<32x2xf16>" in simt
    assert "vector.shape_cast" not in simt
    assert re.search(r"offsets = \[40, 0\], sizes = \[8, 1\]", simt)  # A block (1, 1): array 1, rows 8..15
    assert re.search(r"offsets = \[24, 0\], sizes = \[8, 2\]", simt)  # B block (1, 1): array 1, rows 16..31


def test_arc_coalesces_only_lane_row_operands():
    """No 2D block messages on ARC: in this K loop (split into passes) the loop computes
    C^T (lowering/passes/wg_to_sg/operand_swap.py) and reads both operands transposed with per-lane row
    loads (every load marked ``xetile.lane_rows``): A^T one load per 8x16 block of A
    (M x K), B^T one 16x16 message of B (K x N) per two 8-row blocks of operand A, cut
    into them by slices; nothing with array_length."""
    with pytest.warns(xd.errors.AccumulatorSplitWarning):  # 8 lanes: the K loop runs in passes
        text = xd.compile(gemm_prefetch_kernel, SIG, RFC, target="cpu-arc").asm["xegpu"]
    assert not re.search(r"xegpu\.load_nd [^\n]*array_length", text)
    loads = re.findall(r"xegpu\.load_nd %\S+ (\{[^}]*\} )?: !xegpu\.tensor_desc<(\w+)>", text)
    assert {shape for _, shape in loads} == {"8x16xf16", "16x16xf16"}
    assert all("transpose" in attrs and "xetile.lane_rows" in attrs for attrs, _ in loads)
    assert text.count("vector.extract_strided_slice") == 2 * sum(shape == "16x16xf16" for _, shape in loads)


@pytest.mark.parametrize("kinds, shape, blocks, bits, want", [
    ({"read"}, (32, 32), (8, 16), 16, (4, 2)),              # A f16: 32r16x2c
    ({"read_transform"}, (32, 64), (16, 16), 16, (2, 2)),   # B f16: 32r16x2c transform
    ({"prefetch"}, (8, 32), (8, 16), 16, (1, 2)),           # 8r16x2c
    ({"read", "prefetch"}, (32, 32), (8, 16), 16, (4, 2)),  # loaded and prefetched: legal for both
    ({"read"}, (16, 16), (8, 8), 32, (2, 2)),               # tf32 A: 16r8x2c
    ({"read"}, (16, 32), (8, 16), 32, (2, 1)),              # 32-bit, 16 wide: no array_length
    ({"read_transform"}, (16, 16), (16, 16), 16, None),     # one block: nothing to coalesce
])
def test_message_choice_pvc(kinds, shape, blocks, bits, want):
    m = block_messages.choose(get_target("pvc"), kinds, shape, blocks, bits)
    assert (None if m is None else (m.g0, m.g1)) == want


@xd.jit
def row_prefetch_kernel(b, K, BK: xt.constexpr, BN: xt.constexpr, NS: xt.constexpr):
    """A B prefetch dealt by whole rows, [NS, 1] x [BK / NS, BN] (gemm_wg_kernel's map
    before it was written in one-message pieces)."""
    pb = xt.init_tile(b, [0, xt.program_id(0) * BN], [BK, BN], wg_map=xt.wg_map(sg_layout=[NS, 1], sg_data=[BK // NS, BN]))
    for k in range(0, K, BK):
        xt.prefetch_tile(pb)
        pb = xt.update_tile_offset(pb, BK, 0)


ROWS = ({"b": "f16[:,:]", "K": "i32"}, {"BK": 32, "BN": 256, "NS": 32})


def test_gemm_wg_prefetch_maps_are_one_message_each():
    """gemm_wg_kernel's own prefetch maps need no re-planning: B is [4, 8] x [8, 32], one
    8r16x2c message per subgroup."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrefetchPlanWarning)
        text = xd.compile(gemm_wg_kernel, SIG, WG, target="cpu-pvc").asm["xegpu"]
    assert _loop(text).count("xegpu.prefetch_nd") == 2


def test_row_prefetch_is_replanned_with_a_located_note():
    """A B prefetch map [32, 1] x [1, 256] (eight one-row messages per subgroup) becomes
    [4, 8] x [8, 32], one 8r16x2c message each; the note names the line."""
    with pytest.warns(PrefetchPlanWarning) as record:
        text = xd.compile(row_prefetch_kernel, *ROWS, target="cpu-pvc").asm["xegpu"]
    message = str(record[0].message)
    assert "test_block_messages_rules.py" in message and "pb = xt.init_tile(" in message
    assert "sg_layout=[32, 1], sg_data=[1, 256]" in message and "sg_layout=[4, 8], sg_data=[8, 32]" in message
    assert len(record) == 1
    assert _loop(text).count("xegpu.prefetch_nd") == 1


def test_a_kernel_compiled_again_notes_its_prefetch_plan_once():
    """Under Python's default filter a warning shows once per location: compiling the same
    kernel again (a benchmark, a notebook cell run twice) must not print the note again.
    The compiler used to record its warnings with ``catch_warnings``, which forgets what
    was shown, and re-issue them with a fresh registry: once per compile.  The note is
    located at the kernel's line (file and line number of the warning itself)."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("default")
        for _ in range(2):
            xd.compile(row_prefetch_kernel, *ROWS, target="cpu-pvc")
    notes = [w for w in record if issubclass(w.category, PrefetchPlanWarning)]
    assert len(notes) == 1
    assert notes[0].filename.endswith("test_block_messages_rules.py")
    assert "pb = xt.init_tile(" in linecache.getline(notes[0].filename, notes[0].lineno)


def test_arc_prefetch_maps_are_kept():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrefetchPlanWarning)
        xd.compile(gemm_wg_kernel, SIG, WG, target="cpu-arc")


def test_opt_coalesces_hand_written_xetile_only_with_a_target(tmp_path):
    """A 16x32 f16 K step (2 + 1 + 2 KiB, within 7/8 of the 8 KiB default file): with
    ``{target=pvc}`` its A and B loads are array_length messages; hand-written XeTile
    names no target, so without the option every block keeps its own message."""
    text = mma_kernel(16, 32, 32, "f16", "f32")
    with_target = opt(tmp_path, text, "xetile-blocking{target=pvc},convert-xetile-to-xegpu{target=pvc}")
    assert "array_length = 2" in with_target and "vector.extract_strided_slice" in with_target
    plain = opt(tmp_path, text, "xetile-blocking{target=pvc},convert-xetile-to-xegpu")
    assert "array_length" not in plain and "vector.extract_strided_slice" not in plain


@xd.jit
def mma_then_reduce_kernel(a, b, c, K, AXIS: xt.constexpr):
    """K steps whose results are scaled, reduced and summed (the attention step's shape)."""
    ta, tb = xt.init_tile(a, [0, 0], [32, 32]), xt.init_tile(b, [0, 0], [32, 16])
    acc = xt.zeros([32, 16], xt.float32)
    for k in range(0, K, 32):
        s = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb))
        acc = acc + xt.broadcast_to(xt.sum(xt.exp2(s * 0.5), axis=AXIS), [32, 16])
        ta = xt.update_tile_offset(ta, 0, 32)
        tb = xt.update_tile_offset(tb, 32, 0)
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [32, 16]))


@pytest.mark.parametrize("axis,coalesced", [(0, True), (1, False)])
def test_lane_local_work_next_to_a_k_step_keeps_coalescing(axis, coalesced):
    """Element-wise work and a reduction down the rows keep every lane on its own column:
    A's 32x32 is still one 32-row message of two blocks per K step; a sum across the
    columns (a butterfly over lanes) keeps one message per block, as next to row sums it
    spilled."""
    xegpu = xd.compile(mma_then_reduce_kernel, {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"},
                       {"AXIS": axis}, target="cpu-pvc").asm["xegpu"]
    loop = _loop(xegpu)
    assert (A_MSG in loop) == coalesced
    assert len(re.findall(r"xegpu\.load_nd %\S+ : !xegpu\.tensor_desc<8x16xf16>", loop)) == (0 if coalesced else 8)
