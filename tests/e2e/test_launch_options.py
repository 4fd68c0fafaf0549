"""Triton's launch options: ``num_stages=`` moves K-loop prefetches (the IR shows the
distance, results stay exact), ``num_warps=`` states the subgroup count of a kernel with
wg_maps (a contradiction is refused before anything is built; a kernel without wg_map
runs in subgroup 0 of that many, decision 045), both are part
of the kernel cache key, and bad values fail before the device is touched."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import LaunchError
from xetile_dsl.compiler import to_xetile
from xetile_dsl.dialects import make_context, print_module
from xetile_dsl.jit import _disk_cache
from xetile_dsl.lowering.passes.prefetch_stages import XeTilePrefetchStages

from .test_scalar_ops import subgroup_numbers   # a 4-subgroup (sg_layout [4, 1]) workgroup kernel

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
CONST = {"BM": 16, "BN": 16, "BK": 16, "PF": 2}


@xd.jit
def prefetched_gemm(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, PF: xt.constexpr):
    """C = A @ B with A prefetched ``PF`` K steps ahead (``num_stages`` may move it)."""
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    ta = xt.init_tile(a, [m, 0], [BM, BK])
    tb = xt.init_tile(b, [0, n], [BK, BN])
    pa = xt.init_tile(a, [m, PF * BK], [BM, BK])
    acc = xt.zeros([BM, BN], xt.float32)
    for _ in range(0, K, BK):
        xt.prefetch_tile(pa)
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
        pa = xt.update_tile_offset(pa, 0, BK)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN]))


def _prefetch_start(num_stages: int) -> int:
    """The K offset the prefetched tile starts at after xetile-prefetch-stages."""
    module = to_xetile(prefetched_gemm, SIG, CONST)
    XeTilePrefetchStages(num_stages=num_stages).apply(make_context(), module)
    module.verify()
    text = print_module(module)
    starts = {line.split("=")[0].strip(): line for line in text.splitlines() if "arith.constant" in line}
    inits = [line for line in text.splitlines() if "xetile.init_tile %a" in line]
    assert len(inits) == 2, text          # the loaded tile and the prefetched one
    k_offset = inits[1].split("[")[1].split("]")[0].split(",")[1].strip()
    return int(starts[k_offset].split("constant")[1].split(":")[0])


@pytest.mark.parametrize("stages", [1, 2, 3, 5])
def test_num_stages_sets_the_prefetch_distance_in_the_ir(stages):
    assert _prefetch_start(stages) == (stages - 1) * CONST["BK"]


def test_without_num_stages_the_kernels_distance_stays():
    module = to_xetile(prefetched_gemm, SIG, CONST)
    before = print_module(module)
    XeTilePrefetchStages().apply(make_context(), module)
    assert print_module(module) == before


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret"])
@pytest.mark.parametrize("stages", [None, 1, 4])
def test_num_stages_keeps_results(target, stages):
    rng = np.random.default_rng(7)
    a = rng.integers(-3, 4, (32, 64)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 32)).astype(np.float16)
    c = np.full((32, 32), np.nan, np.float32)
    extra = {} if stages is None else {"num_stages": stages}
    prefetched_gemm.on(target)[(2, 2)](a, b, c, 64, **CONST, **extra)
    # small integers: every product and sum is exact in f16 inputs / f32 accumulation
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


def test_options_are_part_of_the_cache_key():
    specs = xd.compiler.parse_signature(SIG)
    keys = {prefetched_gemm.cache_key(specs, CONST, "cpu-pvc", options)
            for options in ({}, {"num_stages": 2}, {"num_stages": 3}, {"num_warps": 1})}
    assert len(keys) == 4
    assert prefetched_gemm.cache_key(specs, CONST, "cpu-pvc") == prefetched_gemm.cache_key(specs, CONST, "cpu-pvc", {})


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret"])
def test_num_warps_states_the_kernels_subgroups(target):
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32) % 13
    out = np.full_like(x, np.nan)
    subgroup_numbers.on(target)[(1,)](x, out, num_warps=4)
    band = np.repeat(np.arange(4, dtype=np.float32), 16)[:, None]
    np.testing.assert_array_equal(out, x * 4 + band)
    with pytest.raises(LaunchError, match=r"num_warps=2, but subgroup_numbers runs 4 subgroup\(s\) per workgroup"):
        subgroup_numbers.on(target)[(1,)](x, out, num_warps=2)


@xd.jit
def scaled_rows(x, out, BM: xt.constexpr, BN: xt.constexpr, num_warps: xt.constexpr):
    """out = 2 x + 1 over BM-row tiles split by rows among the launch's num_warps subgroups."""
    rows = xt.wg_map(sg_layout=[num_warps, 1], sg_data=[BM // num_warps, BN])
    m = xt.program_id(0) * BM
    v = xt.load_tile(xt.init_tile(x, [m, 0], [BM, BN], wg_map=rows))
    xt.store_tile(v * 2.0 + 1.0, xt.init_tile(out, [m, 0], [BM, BN], wg_map=rows))


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret"])
def test_a_kernel_sizes_its_wg_maps_by_num_warps(target):
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32) % 7
    for warps in (1, 2, 4):
        out = np.full_like(x, np.nan)
        scaled_rows.on(target)[(2,)](x, out, BM=32, BN=32, num_warps=warps)
        np.testing.assert_array_equal(out, x * 2 + 1)     # exact: small integers
    with pytest.raises(LaunchError, match=r"num_warps=3 is not a power of two"):
        scaled_rows.on(target)[(2,)](x, out, BM=32, BN=32, num_warps=3)


def test_the_workgroup_is_num_warps_subgroups():
    x = np.zeros((64, 32), np.float32)
    for warps, lanes, target in ((4, 16, "cpu-pvc"), (2, 8, "cpu-arc")):
        loaded = scaled_rows.on(target).jit.resolve((2,), target, (x, np.zeros_like(x)),
                                                    {"BM": 32, "BN": 32, "num_warps": warps})[0]
        assert (loaded.abi.subgroup_size, loaded.abi.workgroup_size) == (lanes, warps * lanes)


def test_autotune_picks_among_num_warps(tmp_path, monkeypatch):
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))     # no memo from an earlier run
    tuned = xd.autotune(configs=[xd.Config({"BM": 32, "BN": 32}, num_warps=w) for w in (1, 2, 4)], key=[],
                        warmup=1, rep=1, progress=False)(scaled_rows)
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32) % 5
    out = np.full_like(x, np.nan)
    tuned.on("cpu-pvc")[(2,)](x, out)
    np.testing.assert_array_equal(out, x * 2 + 1)
    assert [(str(config), note) for _, config, note in tuned.timings[()]] == [
        (f"Config(BM=32, BN=32, num_warps={w})", "ok") for w in (1, 2, 4)]


def test_a_contradicting_num_warps_builds_nothing():
    """A kernel with wg_maps states its count; a kernel without one takes any num_warps
    (subgroup 0 works: tests/e2e/test_num_warps_without_wg_map.py)."""
    x = np.zeros((64, 32), np.float32)
    cache = _disk_cache()
    compiles = cache.stats.compiles
    with pytest.raises(LaunchError, match=r"num_warps=8, but subgroup_numbers runs 4 subgroup"):
        subgroup_numbers.on("cpu-pvc")[(1,)](x, np.zeros_like(x), num_warps=8)
    assert cache.stats.compiles == compiles     # refused before the disk cache stored anything


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret"])
@pytest.mark.parametrize("options, message", [
    ({"num_warps": 3}, r"num_warps=3 is not a power of two"),
    ({"num_warps": 0}, r"num_warps=0: expected a positive int"),
    ({"num_warps": 4.0}, r"num_warps=4.0: expected a positive int"),
    ({"num_stages": 0}, r"num_stages=0: expected a positive int"),
    ({"num_warps": 256}, r"num_warps=256 subgroups of \d+ lanes are \d+ work items, more than .*largest workgroup "
                         r"\(1024\); use at most"),
    ({"num_warps": 2, "num_subgroups": 4}, r"name the same option"),
])
def test_bad_launch_options_fail_before_the_device(target, options, message):
    a, b = np.ones((32, 32), np.float16), np.ones((32, 32), np.float16)
    c = np.zeros((32, 32), np.float32)
    compiles = _disk_cache().stats.compiles
    with pytest.raises(LaunchError, match=message):
        prefetched_gemm.on(target)[(2, 2)](a, b, c, 32, **CONST, **options)
    assert _disk_cache().stats.compiles == compiles


def test_compile_takes_the_options():
    """The pipeline runs the pass: PF = 2 is num_stages = 3, so only other depths change the IR."""
    xegpu = {s: xd.compile(prefetched_gemm, SIG, CONST, target="cpu-pvc", num_stages=s).asm["xegpu"]
             for s in (None, 1, 3)}
    assert xegpu[None] == xegpu[3] != xegpu[1]
    with pytest.raises(LaunchError, match=r"num_stages=-1"):
        xd.compile(prefetched_gemm, SIG, CONST, target="cpu-pvc", num_stages=-1)


def test_config_passes_triton_options():
    config = xd.Config({"BM": 16}, num_warps=4, num_stages=3)
    assert config.all_kwargs() == {"BM": 16, "num_warps": 4, "num_stages": 3}
    assert str(config) == "Config(BM=16, num_warps=4, num_stages=3)"
