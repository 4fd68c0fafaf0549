"""XeTile RFC Appendix 2.5 (GEMM with two cache levels: L2 and L1 prefetch streams, an
``if`` in the K loop that holds a barrier and moves loop-carried tiles) on the CPU device
in the PVC and ARC flavours, against numpy.  Small-integer f16 inputs make every result
exact; C is prefilled with NaN so a piece no subgroup writes shows."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import xetile_dsl as xd
from xetile_dsl.errors import AccumulatorSplitWarning, CompilationWarning
from xetile_dsl.kernels.gemm_two_level import (
    ARC_TILES, RFC_MAPS, RFC_TILES, SMALL_TILES, gemm_two_level, gemm_two_level_kernel,
)

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}


def _operands(m, n, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b = rng.integers(-3, 4, (k, n)).astype(np.float16)
    return a, b, a.astype(np.float32) @ b.astype(np.float32)


def _run(a, b, target, tiles):
    c = np.full((a.shape[0], b.shape[1]), np.nan, np.float32)
    return gemm_two_level(a, b, c, target=target, tiles=tiles)


def test_rfc_maps_at_512_cubed_pvc_flavour():
    """The RFC's own tiles (512x256 per workgroup, so a 1x2 grid) and maps; the 64x64 f32
    accumulator exceeds the register budget, so the K loop runs in two passes (a note)."""
    a, b, ref = _operands(512, 512, 512, 25)
    with pytest.warns(AccumulatorSplitWarning,
                      match=r"64x64xf32 = 16384 bytes.*runs in 2 passes.*sg_data of at most \[32, 64\]"):
        c = _run(a, b, "cpu-pvc", RFC_TILES)
    np.testing.assert_array_equal(c, ref)


@pytest.mark.parametrize("k", [512, 160], ids=["K512", "K160-partial-L2-block"])
def test_closest_legal_variant_pvc_flavour(k):
    """256x256 workgroup tiles, mp_c [8, 4]x[32, 64]: same structure, no warning."""
    a, b, ref = _operands(512, 512, k, 26)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompilationWarning)
        c = _run(a, b, "cpu-pvc", SMALL_TILES)
    np.testing.assert_array_equal(c, ref)


def test_arc_flavour_with_arc_tiles():
    """ARC's 8 KiB register file: 128x128 tiles (16x32 per subgroup), 8-lane subgroups."""
    a, b, ref = _operands(256, 256, 256, 27)
    c = _run(a, b, "cpu-arc", ARC_TILES)
    np.testing.assert_array_equal(c, ref)


def test_rfc_tiles_arc_flavour_in_eight_passes():
    """The RFC's tiles on 8-lane ARC: 16 KiB of accumulator per subgroup, twice the
    register file; the K loop runs in 8 passes of one 8-row block row each."""
    a, b, ref = _operands(512, 512, 256, 29)
    with pytest.warns(AccumulatorSplitWarning, match="runs in 8 passes"):
        c = _run(a, b, "cpu-arc", RFC_TILES)
    np.testing.assert_array_equal(c, ref)


def test_rfc_tiles_split_loops_in_the_xegpu_stage():
    with pytest.warns(AccumulatorSplitWarning):
        kernel = xd.compile(gemm_two_level_kernel, SIG, RFC_TILES, target="cpu-pvc")
    xegpu = kernel.asm["xegpu"]
    assert xegpu.count("scf.for") == 2 and xegpu.count("scf.if") == 2 and xegpu.count("xegpu.dpas") == 64
    assert kernel.asm["xetile"].count("scf.for") == 1  # the interpreter's level is one loop


def test_interpreter_agrees():
    """The split happens below the interpreter's level (XeGPU): the compiled kernel (two
    loops) agrees with the interpreter (one) and numpy."""
    a, b, ref = _operands(512, 512, 256, 28)
    c = np.zeros((512, 512), np.float32)
    gemm_two_level_kernel.on("interpret")[(1, 2)](a, b, c, 256, **RFC_TILES)
    np.testing.assert_array_equal(c, ref)
    with warnings.catch_warnings():  # the note (also repeated by a kernel from the cache)
        warnings.simplefilter("ignore", AccumulatorSplitWarning)
        compiled = _run(a, b, "cpu-pvc", RFC_TILES)
    np.testing.assert_array_equal(compiled, c)


def _maps_in(text: str) -> set[tuple[tuple[int, ...], tuple[int, ...]]]:
    found = re.findall(r"sg_layout = \[(\d+), (\d+)\], sg_data = \[(\d+), (\d+)\]", text)
    return {((int(a), int(b)), (int(c), int(d))) for a, b, c, d in found}


def test_the_kernel_uses_exactly_the_rfc_maps_and_structure():
    with pytest.warns(CompilationWarning):
        kernel = xd.compile(gemm_two_level_kernel, SIG, RFC_TILES, target="cpu-pvc")
    ir = kernel.asm["xetile"]
    assert _maps_in(ir) == {(tuple(m.sg_layout), tuple(m.sg_data)) for m in RFC_MAPS.values()}
    assert "tile<512x128xf16" in ir and "tile<128x256xf16" in ir  # L2 prefetch tiles
    assert "tile<512x32xf16" in ir and "tile<32x256xf16" in ir  # L1 prefetch and mma tiles
    loop = ir[ir.index("scf.for"):]
    head = loop[loop.rindex("\n", 0, loop.index("scf.if")):loop.index("scf.if")]
    branch = loop[loop.index("scf.if"):loop.index("} else {")]
    assert re.search(r"%a2_l2_\w+, %b2_l2_\w+ = $", head)  # the if's results are the two L2 tiles
    assert re.match(r"scf.if %\w+ -> \(!xetile.tile<512x128xf16.*!xetile.tile<128x256xf16", branch)
    assert '"gpu.barrier"' in branch and branch.count("locality<2>") == 2
    assert loop.count("locality<3>") == 2  # the L1 stream, every K step
    assert ir.count("locality<2>") == 6 and ir.count("locality<3>") == 10
    assert kernel.abi.workgroup_size == 32 * 16


def test_barrier_outside_a_kernel_is_an_error():
    import xetile_dsl.language as xt

    with pytest.raises(RuntimeError, match="only be called inside a @xetile_dsl.jit kernel"):
        xt.barrier()
