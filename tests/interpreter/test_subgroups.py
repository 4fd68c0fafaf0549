"""Per-subgroup execution: workgroup-level kernels distributed by xetile-wg-to-sg and run
as cooperatively scheduled subgroups (shared SLM, barriers), against numpy, against the
whole-tile mode and, for kernels that use ``subgroup_id``, against the compiled kernel on
the OpenCL CPU device."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError
from xetile_dsl.interpreter import InterpreterError, interpret
from xetile_dsl.dialects import parse_module
from xetile_dsl.kernels import workgroup_slm as W
from xetile_dsl.kernels.gemm_wg import gemm_prefetch_kernel, gemm_wg

MODES = ["interpret", "interpret-subgroups"]


def _both_modes(launch):
    """``launch(target)`` in whole-tile and per-subgroup mode; returns both outputs."""
    return [launch(mode) for mode in MODES]


def _small_ints(rng, shape, dtype):
    return rng.integers(-3, 4, shape).astype(dtype)


# --- the example workgroup kernels -----------------------------------------------------
@pytest.mark.parametrize("dtype,sm,sn", [(np.float16, 4, 2), (ml_dtypes.bfloat16, 4, 2), (np.float32, 2, 2),
                                         (np.int8, 2, 2), (np.uint8, 4, 2)], ids=["f16", "bf16", "tf32", "i8", "u8"])
def test_gemm_wg_per_subgroup_matches_numpy_and_whole_tile(dtype, sm, sn):
    """gemm_wg_kernel (maps derived from the tile sizes, cooperative prefetch maps) on a
    2x2 grid of 64x64 workgroup tiles in every DPAS type; C prefilled so a piece no
    subgroup writes shows."""
    rng = np.random.default_rng(1)
    M = N = K = 128
    a, b = _small_ints(rng, (M, K), dtype), _small_ints(rng, (K, N), dtype)
    if dtype == np.uint8:
        a, b = a + np.uint8(3), b + np.uint8(3)
    acc = np.int32 if dtype in (np.int8, np.uint8) else np.float32
    outs = _both_modes(lambda mode: gemm_wg(a, b, np.full((M, N), -7, acc), target=mode, SM=sm, SN=sn))
    ref = a.astype(acc) @ b.astype(acc)
    for c in outs:
        np.testing.assert_array_equal(c, ref)


def test_rfc_appendix_2_1_gemm_32_subgroups(monkeypatch):
    """gemm_prefetch_kernel: the RFC's 256x256 workgroup tile, sg_layout [8, 4] (32
    subgroups), A/B prefetch maps [32, 1] and [4, 8]."""
    from xetile_dsl.interpreter import subgroups

    started = []
    real_run = subgroups.Workgroup.run
    monkeypatch.setattr(subgroups.Workgroup, "run",
                        lambda self, body: started.append(self.num_subgroups) or real_run(self, body))
    rng = np.random.default_rng(2)
    M = N = 256
    K = 64
    a, b = _small_ints(rng, (M, K), np.float16), _small_ints(rng, (K, N), np.float16)

    def launch(mode):
        c = np.full((M, N), np.nan, np.float32)
        gemm_prefetch_kernel.on(mode)[(1, 1)](a, b, c, K, BM=256, BN=256, BK=32, PF=1)
        return c

    for c in _both_modes(launch):
        np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))
    assert started == [32]  # one workgroup of 32 subgroups in per-subgroup mode, none in whole-tile mode


def _slm_cases():
    rng = np.random.default_rng(3)
    f = rng.standard_normal((64, 64)).astype(np.float32)
    big = rng.standard_normal((256, 128)).astype(np.float32)
    rows = rng.standard_normal((512, 128)).astype(np.float32)
    a16, b16 = _small_ints(rng, (128, 64), np.float16), _small_ints(rng, (64, 128), np.float16)
    mm = a16.astype(np.float32) @ b16.astype(np.float32)
    return {
        "conv_layout": (W.conv_layout_kernel, (1,), [f, np.zeros_like(f)], {}, {1: f * 2 + 1}),
        "big_conv": (W.big_conv_kernel, (1,), [big, np.zeros_like(big)], {}, {1: big}),
        "row_sum": (W.row_sum_kernel, (2,), [rows, np.zeros((512, 16), np.float32)], {},
                    {1: np.pad(rows.sum(1, dtype=np.float64).astype(np.float32)[:, None], ((0, 0), (0, 15)))}),
        "col_max": (W.col_max_kernel, (1,), [f, np.zeros((1, 64), np.float32)], {}, {1: f.max(0)[None]}),
        "gemm_rowsum": (W.gemm_rowsum_kernel, (2, 2),
                        [a16, b16, np.zeros((128, 128), np.float32), np.zeros((128, 16), np.float32), 64], {"BK": 32},
                        {2: mm, 3: np.pad(mm.reshape(128, 2, 64).sum(2), ((0, 0), (0, 14)))}),
        "gemm_coop": (W.gemm_coop_kernel, (2, 2), [a16, b16, np.zeros((128, 128), np.float32), 64], {"BK": 32},
                      {2: mm}),
    }


@pytest.mark.parametrize("name", sorted(_slm_cases()))
def test_slm_kernels_per_subgroup_match_numpy_and_whole_tile(name):
    """workgroup_slm.py: SLM exchanges (tile_conv_layout, cross-subgroup reductions) with
    their barriers, the Appendix 2.4 cooperative GEMM."""
    kernel, grid, args, consts, expected = _slm_cases()[name]
    results = []
    for mode in MODES:
        run_args = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
        kernel.on(mode)[grid](*run_args, **consts)
        results.append(run_args)
    for position, ref in expected.items():
        whole, per_sg = results[0][position], results[1][position]
        np.testing.assert_array_equal(per_sg, whole)
        np.testing.assert_allclose(per_sg, ref, rtol=1e-5, atol=1e-5)


# --- subgroup_id -----------------------------------------------------------------------
ROWS = xt.wg_map(sg_layout=[4, 1], sg_data=[8, 32])


@xd.jit
def tag_by_subgroup_kernel(a, c):
    """Each subgroup adds ``10 * subgroup_id`` to its 8-row band (of i32: the codegen has
    no scalar int-to-float conversion yet)."""
    v = xt.load_tile(xt.init_tile(a, [0, 0], [32, 32], wg_map=ROWS))
    xt.store_tile(v + xt.subgroup_id() * 10, xt.init_tile(c, [0, 0], [32, 32], wg_map=ROWS))


@xd.jit
def tag_with_count_kernel(a, c):
    """Each subgroup adds ``10 * subgroup_id + num_subgroups`` to its 8-row band (the
    codegen has no gpu.num_subgroups yet: interpreter only)."""
    v = xt.load_tile(xt.init_tile(a, [0, 0], [32, 32], wg_map=ROWS))
    xt.store_tile(v + (xt.subgroup_id() * 10 + xt.num_subgroups()), xt.init_tile(c, [0, 0], [32, 32], wg_map=ROWS))


def _tag_expected(a, count=0):
    return a + (np.repeat(np.arange(4), 8) * 10 + count)[:, None].astype(np.float32)


def test_subgroup_id_in_a_workgroup_kernel_runs_per_subgroup_by_default():
    a = np.random.default_rng(4).standard_normal((32, 32)).astype(np.float32)
    c = np.zeros_like(a)
    tag_with_count_kernel.on("interpret")[(1,)](a, c)
    np.testing.assert_array_equal(c, _tag_expected(a, count=4))


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc"])
def test_subgroup_id_agrees_with_the_compiled_kernel(target):
    a = np.random.default_rng(5).integers(-1000, 1000, (32, 32)).astype(np.int32)
    interp, compiled = np.zeros_like(a), np.full_like(a, -1)
    tag_by_subgroup_kernel.on("interpret-subgroups")[(1,)](a, interp)
    tag_by_subgroup_kernel.on(target)[(1,)](a, compiled)
    np.testing.assert_array_equal(interp, a + np.repeat(np.arange(4) * 10, 8)[:, None])
    np.testing.assert_array_equal(compiled, interp)


def test_whole_tile_mode_rejects_subgroup_id_at_the_user_line():
    from xetile_dsl.interpreter import launch_jit

    a = np.zeros((32, 32), np.int32)
    with pytest.raises(InterpreterError, match=r"test_subgroups.py:\d+:\d+: xt.subgroup_id\(\) in a workgroup-level "
                                               r"kernel .*interpret-subgroups"):
        launch_jit(tag_by_subgroup_kernel, (1,), (a, a.copy()), {}, subgroups=False)


@xd.jit
def bad_k_split_kernel(a, b, c):
    acc = xt.tile_mma(xt.load_tile(xt.init_tile(a, [0, 0], [32, 32], wg_map=xt.wg_map([2, 2], [16, 16]))),
                      xt.load_tile(xt.init_tile(b, [0, 0], [32, 32], wg_map=xt.wg_map([2, 2], [16, 16]))),
                      wg_map=xt.wg_map([2, 2], [16, 16]))
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [32, 32], wg_map=xt.wg_map([2, 2], [16, 16])))


def test_a_distribution_the_compiler_rejects_is_its_error_at_the_user_line():
    a = np.zeros((32, 32), np.float16)
    with pytest.raises(CompilationError, match="each subgroup must hold the whole K dimension") as info:
        bad_k_split_kernel.on("interpret-subgroups")[(1,)](a, a.copy(), np.zeros((32, 32), np.float32))
    assert "test_subgroups.py" in str(info.value)


def test_subgroup_level_kernels_are_one_subgroup_in_both_modes():
    @xd.jit
    def ids(out):
        v = xt.zeros([1, 16], xt.int32) + (xt.subgroup_id() * 100 + xt.num_subgroups())
        xt.store_tile(v, xt.init_tile(out, [0, 0], [1, 16]))

    for mode in MODES:
        out = np.full((1, 16), -1, np.int32)
        ids.on(mode)[(1,)](out)
        np.testing.assert_array_equal(out, 1)


# --- barriers --------------------------------------------------------------------------
def _rotate_kernel(barrier: bool) -> str:
    """4 subgroups: subgroup s writes row s of a 4x16 SLM buffer with s + 1, then (after
    the barrier) reads row (s + 1) mod 4 and stores it to row s of the output."""
    slm = "memref<4x16xi32, 3 : i64>"
    t = "!xetile.tile<1x16xi32, #xetile.tile_attr<memory_space = 3>>"
    return f"""
func.func @rotate(%out: memref<4x16xi32>) attributes {{xetile.num_subgroups = 4 : i32}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %sg = "gpu.subgroup_id"() : () -> index
  %buf = memref.alloc() : {slm}
  %sg_i = arith.index_cast %sg : index to i32
  %one = arith.constant 1 : i32
  %val = arith.addi %sg_i, %one : i32
  %row = vector.broadcast %val : i32 to vector<1x16xi32>
  %mine = xetile.init_tile %buf[%sg, %c0] : {slm} -> {t}
  xetile.store_tile %row, %mine : vector<1x16xi32>, {t}
{'  "gpu.barrier"() : () -> ()' if barrier else ''}
  %next1 = arith.addi %sg, %c1 : index
  %next = arith.remsi %next1, %c4 : index
  %theirs = xetile.init_tile %buf[%next, %c0] : {slm} -> {t}
  %got = xetile.load_tile %theirs : {t} -> vector<1x16xi32>
  %dst = xetile.init_tile %out[%sg, %c0] : memref<4x16xi32> -> !xetile.tile<1x16xi32>
  xetile.store_tile %got, %dst : vector<1x16xi32>, !xetile.tile<1x16xi32>
  func.return
}}"""


def _rotate(barrier: bool) -> np.ndarray:
    out = np.full((4, 16), -1, np.int32)
    module = parse_module(_rotate_kernel(barrier))
    module.verify()
    interpret(module, (2,), [out], subgroups=True)
    return out


def test_barrier_makes_the_other_subgroups_writes_visible():
    np.testing.assert_array_equal(_rotate(barrier=True)[:, 0], [2, 3, 4, 1])


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc"])
def test_barrier_kernel_agrees_with_the_compiled_kernel(target):
    """The same MLIR compiled (xd.compile_mlir): 4 subgroups, SLM, gpu.barrier."""
    out = np.full((4, 16), -1, np.int32)
    xd.compile_mlir(_rotate_kernel(barrier=True), target).launch((2,), [out])
    np.testing.assert_array_equal(out, _rotate(barrier=True))


def test_without_the_barrier_the_lower_subgroups_read_stale_slm():
    """The schedule runs subgroups in id order between barriers: subgroups 0-2 read rows
    not yet written (SLM starts as zeros here), only subgroup 3 sees row 0.  The launch
    has two workgroups and the second one writes the output last: it too reads zeros, so
    SLM is per workgroup (the first workgroup's rows are not visible to it)."""
    np.testing.assert_array_equal(_rotate(barrier=False)[:, 0], [0, 0, 0, 1])


def test_a_divergent_barrier_is_an_error():
    text = _rotate_kernel(barrier=False).replace(
        "  %next1 =", """  %is0 = arith.cmpi eq, %sg, %c0 : index
  scf.if %is0 {
    "gpu.barrier"() : () -> ()
  }
  %next1 =""")
    module = parse_module(text)
    with pytest.raises(InterpreterError, match=r"subgroup\(s\) \[0\] wait at this barrier but subgroup\(s\) "
                                               r"\[1, 2, 3\] .* returned"):
        interpret(module, (1,), [np.zeros((4, 16), np.int32)], subgroups=True)


def test_xetile_interpret_subgroups_selects_the_per_subgroup_mode(monkeypatch):
    """XETILE_INTERPRET=subgroups: every launch without an explicit target runs in the
    interpreter, workgroup kernels per subgroup."""
    from xetile_dsl.interpreter import subgroups

    counts = []
    real_run = subgroups.Workgroup.run
    monkeypatch.setattr(subgroups.Workgroup, "run",
                        lambda self, body: counts.append(self.num_subgroups) or real_run(self, body))
    monkeypatch.setenv("XETILE_INTERPRET", "subgroups")
    a = np.random.default_rng(6).standard_normal((64, 64)).astype(np.float32)
    c = np.zeros_like(a)
    W.conv_layout_kernel[(1,)](a, c)
    np.testing.assert_array_equal(c, a * 2 + 1)
    assert counts == [4]
    monkeypatch.setenv("XETILE_INTERPRET", "1")
    W.conv_layout_kernel[(1,)](a, c)
    assert counts == [4]  # whole-tile mode: no per-subgroup workgroup


def test_the_pass_barriers_are_what_orders_the_slm_exchange(monkeypatch):
    """conv_layout_kernel with the barrier xetile-wg-to-sg inserts removed from the
    distributed program: subgroup s stores row band s to SLM and reads column band s, so
    without the barrier it sees only the rows of subgroups 0..s (rows >= 16 (s + 1) are
    still zero, giving 2 * 0 + 1); with the barrier the result is right.  The per-subgroup
    interpreter thus checks the pass's synchronisation, not just its shapes."""
    from xetile_dsl.interpreter import launch as launch_mod

    a = np.random.default_rng(7).standard_normal((64, 64)).astype(np.float32) + 10
    real = launch_mod.subgroup_program

    def without_barriers(module, fn, flavour):
        module, fn = real(module, fn, flavour)
        barriers = [op for op in fn.walk() if op.name == "gpu.barrier"]
        assert len(barriers) == 1
        for op in barriers:
            op.detach()
            op.erase()
        return module, fn

    monkeypatch.setattr(launch_mod, "subgroup_program", without_barriers)
    c = np.zeros_like(a)
    W.conv_layout_kernel.on("interpret-subgroups")[(1,)](a, c)
    rows, cols = np.indices(a.shape)
    stale = rows >= 16 * (cols // 16 + 1)
    np.testing.assert_array_equal(c, np.where(stale, np.float32(1), a * 2 + 1))
    monkeypatch.setattr(launch_mod, "subgroup_program", real)
    W.conv_layout_kernel.on("interpret-subgroups")[(1,)](a, c)
    np.testing.assert_array_equal(c, a * 2 + 1)
