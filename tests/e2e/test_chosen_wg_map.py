"""Compiler-chosen wg_maps (pass ``xetile-choose-wg-map``, decision 048): a kernel without
wg_map launched with ``num_warps=n`` is split among its ``n`` subgroups -- a GEMM by an
``sg_layout [a, b]`` over C (A rows by a, B columns by b), a row kernel by rows -- with the
result of ``num_warps=1``, in the interpreter (per subgroup: the distributed program) and
on the CPU device; the ISA holds a quarter of the DPAS per subgroup at 4 subgroups; what
cannot be split keeps decision 045's fallback, with the reason in the warning."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.compiler import to_xetile
from xetile_dsl.dialects import make_context, print_module
from xetile_dsl.errors import CompilationWarning
from xetile_dsl.lowering.passes.choose_wg_map import XeTileChooseWgMap
from xetile_dsl.tools.isa import hot_loop

from tests.conftest_tools import require_ocloc

from .test_launch_options import SIG, prefetched_gemm   # A prefetched PF steps ahead, no wg_map

GEMM = {"BM": 32, "BN": 32, "BK": 32, "PF": 1}


@xd.jit
def row_softmax(x, y, BM: xt.constexpr, BN: xt.constexpr):
    """Softmax of each row of a BM x BN tile: two row reductions, no wg_map."""
    row = xt.program_id(0) * BM
    v = xt.load_tile(xt.init_tile(x, [row, 0], [BM, BN]))
    e = xt.exp(v - xt.max(v, axis=1))
    xt.store_tile(e / xt.sum(e, axis=1), xt.init_tile(y, [row, 0], [BM, BN]))


@xd.jit
def shifted_double(x, BM: xt.constexpr, BN: xt.constexpr):
    """x[BM/2 : 3BM/2] = 2 x[0 : BM]: written through a tile other than the one read, so
    subgroups splitting the rows could read rows another one already wrote."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [BM, BN]))
    xt.store_tile(v * 2.0, xt.init_tile(x, [BM // 2, 0], [BM, BN]))


def _chosen_ir(kernel, sig, const, n, target="pvc") -> str:
    module = to_xetile(kernel, sig, const)
    XeTileChooseWgMap(num_warps=n, target=target).apply(make_context(), module)
    module.verify()
    return print_module(module)


def test_a_gemm_gets_a_2x2_layout_over_c():
    """32x32 C at 4 subgroups: [2, 2], 16x16 pieces (whole 8x16 DPAS blocks on pvc, the
    squarest piece); A [16, K] shared along a row of the layout, B [K, 16] along a column;
    the prefetched A slice one 8x32 message per subgroup (the prefetch plan's map)."""
    text = _chosen_ir(prefetched_gemm, SIG, GEMM, 4)
    lay = "#xetile.wg_map<sg_layout = [2, 2], sg_data = "
    assert "tile_mma %" in text and f"{{wg_map = {lay}[16, 16]>}}" in text
    assert f"-> !xetile.tile<32x32xf16, #xetile.tile_attr<wg_map = {lay}[16, 32]>>>" in text     # A
    assert f"-> !xetile.tile<32x32xf16, #xetile.tile_attr<wg_map = {lay}[32, 16]>>>" in text     # B
    assert f"-> !xetile.tile<32x32xf32, #xetile.tile_attr<wg_map = {lay}[16, 16]>>>" in text     # C
    assert "sg_layout = [4, 1], sg_data = [8, 32]" in text                                       # prefetch
    assert "xetile.unsplit" not in text


def test_a_row_kernel_is_split_by_rows():
    text = _chosen_ir(row_softmax, {"x": "f32[:,:]", "y": "f32[:,:]"}, {"BM": 8, "BN": 32}, 2)
    assert text.count("sg_layout = [2, 1], sg_data = [4, 32]") >= 4       # tiles, broadcasts
    assert "tile_reduce <maximumf> %17 [1] {wg_map = #xetile.wg_map<sg_layout = [2, 1], sg_data = [4, 1]>}" in text


def _gemm_inputs():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    return a, b


@pytest.mark.parametrize("target", ["interpret-subgroups", "cpu-pvc"])
def test_the_split_gemm_matches_numpy(target):
    a, b = _gemm_inputs()
    c = np.full((64, 64), np.nan, np.float32)          # every element must be stored by some subgroup
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompilationWarning)   # split: no fallback warning
        prefetched_gemm.on(target)[(2, 2)](a, b, c, 64, num_warps=4, **GEMM)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    # f16 x f16 products are exact in f32 (22 significant bits); the K = 64 terms are summed
    # in f32: |error| <= K 2^-24 (|A| |B|) elementwise
    bound = 64 * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64))
    assert np.all(np.abs(c - a64 @ b64) <= bound)


def test_the_split_row_kernel_matches_numpy():
    x = np.random.default_rng(4).standard_normal((16, 32)).astype(np.float32) * 4
    y = np.full_like(x, np.nan)
    row_softmax.on("interpret-subgroups")[(2,)](x, y, BM=8, BN=32, num_warps=2)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    ref = e / e.sum(1, keepdims=True)
    # f32: x - max rounds (2^-24 R through exp, R the row's range), exp 3 ulp, the N-term
    # sum N 2^-24, the divide 2.5 ulp: relative (3R + N + 40) 2^-24 (tutorial 2's bound)
    span = x.max(1, keepdims=True) - x.min(1, keepdims=True)
    assert np.all(np.abs(y - ref) <= ref * (3 * span + 32 + 40) * 2.0 ** -24)


def test_what_cannot_be_split_falls_back_with_the_reason():
    x = np.arange(24 * 16, dtype=np.float32).reshape(24, 16) % 11
    want = x.copy()
    want[4:12] = 2 * x[0:8]                            # one subgroup: all of the read before the write
    with pytest.warns(CompilationWarning, match=r"num_warps=2: shifted_double has no wg_map and the compiler "
                                                r"cannot choose one \(it reads array 'x' through a tile other "
                                                r"than the one it writes it through\), so its work is not split"):
        shifted_double.on("interpret-subgroups")[(1,)](x, BM=8, BN=16, num_warps=2)
    np.testing.assert_array_equal(x, want)             # exact: small integers times 2


def _hot_accumulators(kernel) -> tuple[int, int]:
    """(DPAS in the hot K loop, distinct accumulator registers they write)."""
    dests = re.findall(r"dpas\.\S+\s+\(\S+\)\s+(r\d+)", hot_loop(kernel.asm["isa"]))
    return len(dests), len(set(dests))


def test_each_subgroup_runs_a_quarter_of_the_dpas():
    """pvc, 32x32 C in [2, 2] pieces of 16x16: a subgroup of the 4-subgroup kernel
    accumulates 2 of the 8 8x16 DPAS blocks of C, with as many DPAS per block and K step
    (the hot loop may run several K steps per trip: xegpu-rotate-loads)."""
    require_ocloc()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompilationWarning)
        four = xd.compile(prefetched_gemm, SIG, GEMM, target="pvc", num_warps=4)
    one = xd.compile(prefetched_gemm, SIG, GEMM, target="pvc")
    assert (four.abi.workgroup_size, one.abi.workgroup_size) == (64, 16)
    (dpas4, acc4), (dpas1, acc1) = _hot_accumulators(four), _hot_accumulators(one)
    assert (acc4, acc1) == (2, 8)
    per_block_step = GEMM["BK"] // 16                   # f16 DPAS K depth 16 on pvc
    assert dpas4 % (acc4 * per_block_step) == 0 and dpas1 == acc1 * per_block_step


def test_autotune_over_num_warps_on_the_cpu_device():
    """The tuner runs both configurations against the interpreter's result (the derived
    tolerance): the split one is no fallback (no warning) and agrees."""
    tuned = xd.autotune(configs=[xd.Config(GEMM, num_warps=w) for w in (1, 4)], key=[], warmup=1, rep=1,
                        progress=False)(prefetched_gemm)
    a, b = _gemm_inputs()
    c = np.zeros((64, 64), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompilationWarning)
        tuned.on("cpu-pvc")[(2, 2)](a, b, c, 64)
    assert [(str(config), note) for _, config, note in tuned.timings[()]] == [
        (f"Config(BM=32, BN=32, BK=32, PF=1, num_warps={w})", "ok") for w in (1, 4)]


@xd.jit
def linear_relu(a, b, bias, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """c = f16(relu(a @ b + bias)) (tutorial 3): the epilogue takes C's map, the [1, BN]
    bias row is held whole by the subgroups of a layout row."""
    m, n = xt.program_id(0) * BM, xt.program_id(1) * BN
    ta = xt.init_tile(a, [m, 0], [BM, BK])
    tb = xt.init_tile(b, [0, n], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for _ in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    y = xt.maximum(acc + xt.load_tile(xt.init_tile(bias, [0, n], [1, BN])), 0.0)
    xt.store_tile(xt.astype(y, xt.float16), xt.init_tile(c, [m, n], [BM, BN]))


def test_a_gemm_epilogue_with_a_bias_row_is_split():
    a, b = _gemm_inputs()
    bias = np.random.default_rng(5).standard_normal((1, 64)).astype(np.float32)
    c = np.full((64, 64), np.nan, np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompilationWarning)
        linear_relu.on("interpret-subgroups")[(2, 2)](a, b, bias, c, 64, BM=32, BN=32, BK=32, num_warps=4)
    ref = np.maximum(a.astype(np.float64) @ b + bias, 0)
    # f32 sums of K = 64 exact products and the bias: (K + 1) 2^-24 sum|a b|, then the f16
    # rounding: 2^-11 |c|, and 2^-25 (half the f16 subnormal spacing) near 0
    bound = 65 * 2.0 ** -24 * (np.abs(a).astype(np.float64) @ np.abs(b)) + 2.0 ** -11 * np.abs(ref) + 2.0 ** -25
    assert np.all(np.abs(c - ref) <= bound)
