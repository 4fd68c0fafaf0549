"""``num_warps=n`` on a kernel without wg_map (decision 045): the workgroup runs ``n``
subgroups, subgroup 0 does the kernel's work and the others exit at entry, with a
warning at the user's line; every flavour gives the one-subgroup result (no store or
accumulation runs ``n`` times).  ``num_warps`` not a power of two, or above the target's
largest workgroup, stays a LaunchError (tests/e2e/test_launch_options.py)."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import LaunchError
from xetile_dsl.errors import CompilationWarning
from xetile_dsl.lowering.passes.one_working_subgroup import XeTileOneWorkingSubgroup
from xetile_dsl.compiler import to_xetile
from xetile_dsl.dialects import make_context, print_module

from tests.conftest_tools import require_ocloc

from .test_launch_options import CONST, SIG, prefetched_gemm

WARNING = r"num_warps=4: \w+ has no wg_map, so its work is not split among subgroups"


@xd.jit
def masked_add(x, y, out, n, BLOCK: xt.constexpr):
    """out[i] = x[i] + y[i] + out[i] for i < n: a 1-D masked kernel whose read-modify-write
    of ``out`` shows a second working subgroup (it would add twice)."""
    offs = xt.program_id(0) * BLOCK + xt.arange(0, BLOCK)
    keep = offs < n
    vx = xt.load_tile(xt.init_tile(x, [xt.program_id(0) * BLOCK], [BLOCK]), mask=keep, other=0.0)
    vy = xt.load_tile(xt.init_tile(y, [xt.program_id(0) * BLOCK], [BLOCK]), mask=keep, other=0.0)
    to = xt.init_tile(out, [xt.program_id(0) * BLOCK], [BLOCK])
    xt.store_tile(vx + vy + xt.load_tile(to, mask=keep, other=0.0), to, mask=keep)


def _masked_add(target: str):
    n = 37                                   # small integers: every sum is exact in f32
    x, y = np.arange(n, dtype=np.float32), np.arange(n, dtype=np.float32) % 7
    out = np.ones(n, np.float32)
    with pytest.warns(CompilationWarning, match=WARNING):
        masked_add.on(target)[(3,)](x, y, out, n, BLOCK=16, num_warps=4)
    np.testing.assert_array_equal(out, x + y + 1)


@pytest.mark.parametrize("target", ["interpret", "cpu-pvc"])
def test_masked_one_d_add_runs_once_per_workgroup(target):
    _masked_add(target)


@xd.jit
def fenced_copy(x, out):
    """A kernel without wg_map that calls xt.barrier(): not run in one subgroup of four."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.barrier()
    xt.store_tile(v, xt.init_tile(out, [0, 0], [8, 16]))


@pytest.mark.parametrize("target", ["interpret", "cpu-pvc"])
def test_a_barrier_without_wg_map_keeps_num_warps_refused(target):
    x = np.ones((8, 16), np.float32)
    with pytest.raises(LaunchError, match=r"num_warps=4: fenced_copy has no wg_map and calls xt.barrier\(\)"):
        fenced_copy.on(target)[(1,)](x, np.zeros_like(x), num_warps=4)


def test_gemm_without_wg_map_takes_num_warps_in_the_interpreter():
    """ones . ones over K = 32: every element of C is exactly 32."""
    a, b = np.ones((32, 32), np.float16), np.ones((32, 32), np.float16)
    c = np.zeros((32, 32), np.float32)
    with pytest.warns(CompilationWarning, match=WARNING):
        prefetched_gemm.on("interpret")[(2, 2)](a, b, c, 32, num_warps=4, **CONST)
    np.testing.assert_array_equal(c, np.full((32, 32), 32.0))


def test_the_pass_guards_the_body_on_subgroup_zero():
    module = to_xetile(prefetched_gemm, SIG, CONST)
    with pytest.warns(UserWarning, match=WARNING):   # a pass run alone warns at once
        XeTileOneWorkingSubgroup(num_warps=4).apply(make_context(), module)
    module.verify()
    text = print_module(module)
    assert "gpu.subgroup_id" in text and "scf.if" in text and "xetile.num_subgroups = 4 : i32" in text
    untouched = to_xetile(prefetched_gemm, SIG, CONST)
    XeTileOneWorkingSubgroup(num_warps=1).apply(make_context(), untouched)
    assert "gpu.subgroup_id" not in print_module(untouched)


@pytest.mark.parametrize("target, lanes", [("pvc", 16), ("arc", 8)])
def test_the_isa_has_the_workgroup_and_the_one_subgroup_tile(target, lanes):
    """The ABI's workgroup is 4 subgroups; the machine code still multiplies the whole
    16x16 tile in one subgroup (the DPAS count of the one-subgroup kernel)."""
    require_ocloc()
    with pytest.warns(CompilationWarning, match=WARNING):
        four = xd.compile(prefetched_gemm, SIG, CONST, target=target, num_warps=4)
    one = xd.compile(prefetched_gemm, SIG, CONST, target=target)
    assert (four.abi.workgroup_size, one.abi.workgroup_size) == (4 * lanes, lanes)
    assert "gpu.subgroup_id" in four.asm["xegpu"]
    dpas = [k.asm["isa"].count("dpas") for k in (four, one)]
    assert dpas[0] == dpas[1] > 0


def test_autotune_over_num_warps_on_a_kernel_without_wg_map(tmp_path, monkeypatch):
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))     # no memo from an earlier run
    tuned = xd.autotune(configs=[xd.Config({"BLOCK": 16}, num_warps=w) for w in (1, 4)], key=[],
                        warmup=1, rep=1, progress=False)(masked_add)
    n = 37
    x, out = np.arange(n, dtype=np.float32), np.zeros(n, np.float32)
    tuned.on("cpu-pvc")[lambda meta: (-(-n // meta["BLOCK"]),)](x, x, out, n)   # warns if 4 wins
    np.testing.assert_array_equal(out, 2 * x)   # the tuner's runs work on copies, or this adds up
    assert [(str(config), note) for _, config, note in tuned.timings[()]] == [
        (f"Config(BLOCK=16, num_warps={w})", "ok") for w in (1, 4)]
