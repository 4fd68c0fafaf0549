"""GPU targets as users reach them: every target of TARGETS compiles (pvc, bmg, lnl, ptl,
arc), a GPU target's code is refused on the CPU device with what would run instead, and
the workgroup GEMM's tiles are chosen per target (the ISA each builds to is checked in
tests/isa/test_gemm_wg_isa.py)."""
from __future__ import annotations

import pytest

from xetile_dsl.compiler import compile_target
from xetile_dsl.errors import LaunchError
from xetile_dsl.jit import _check_device_runs
from xetile_dsl.kernels.gemm_wg import ARC_TILES, EMULATED_TILE, gemm_tile_for, gemm_wg_configs
from xetile_dsl.runtime.devices import Device
from xetile_dsl.targets import TARGETS, cpu_device, launch_facts, target_aliases


def test_every_gpu_target_is_a_compile_target():
    assert {"pvc", "bmg", "lnl", "ptl", "arc"} <= set(TARGETS)
    assert all((compile_target(name).gpu, compile_target(name).emulate) == (TARGETS[name], False) for name in TARGETS)
    assert target_aliases()["cpu-pvc"] == ("pvc", True) and target_aliases()["cpu-arc"] == ("arc", True)
    assert all(cpu_device.runs_on_cpu_device(name) == emulate for name, (_, emulate) in target_aliases().items())


def test_the_launch_rule_holds_for_every_target():
    """A launch reads the narrow-row numbers from launch_facts.py (without building the
    tables); no target's 2D block limits may be stricter, or a launch would pick another
    kernel specialisation than the target needs (register_target refuses such a target)."""
    assert all(t.block2d_limits.launch_rule_problem() is None for t in TARGETS.values() if t.has_2d_block_io)
    assert launch_facts.NARROW_ROW_BYTES == max(
        t.block2d_limits.min_width_bytes for t in TARGETS.values() if t.has_2d_block_io)


@pytest.mark.parametrize("target", ["pvc", "bmg", "lnl", "arc"])
def test_gpu_code_is_refused_on_the_cpu_device(target):
    cpu = Device(name="Intel CPU", backend="dpctl", platform="opencl", kind="cpu")
    with pytest.raises(LaunchError, match=rf"target '{target}' is GPU machine code.*\.on\('cpu-pvc'\)"):
        _check_device_runs(target, cpu)
    _check_device_runs("cpu-pvc", cpu)
    _check_device_runs(target, Device(name="GPU", backend="dpctl", platform="level_zero", kind="gpu"))


def test_gemm_tiles_per_target():
    assert gemm_tile_for("pvc").constants() == {"BM": 256, "BN": 256, "SM": 8, "SN": 4, "PF": 3}  # RFC 2.1
    assert gemm_tile_for("bmg").constants() == {"BM": 256, "BN": 256, "SM": 8, "SN": 4, "PF": 3}
    assert gemm_tile_for("lnl").constants() == {"BM": 128, "BN": 256, "SM": 4, "SN": 4, "PF": 3}
    # ARC: the measured recommended config (tests/isa/test_arc_block_reads_isa.py), two DPAS K blocks per step
    assert gemm_tile_for("arc").constants() == {"BM": 128, "BN": 128, "SM": 4, "SN": 4, "PF": 2}
    assert gemm_wg_configs("arc", "f16")[0].kwargs == ARC_TILES == {**gemm_tile_for("arc").constants(), "BK": 32}
    assert [c.kwargs["BK"] for c in gemm_wg_configs("arc", "i8")] == [64, 64]
    assert [c.kwargs["BK"] for c in gemm_wg_configs("pvc", "f16")] == [32] * len(TARGETS["pvc"].gemm_tiles)
    assert gemm_tile_for("cpu-pvc") == gemm_tile_for("interpret") == EMULATED_TILE
    assert [c.kwargs for c in gemm_wg_configs("lnl")] == [t.constants() for t in TARGETS["lnl"].gemm_tiles]


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_gemm_tiles_fit_the_target(target):
    """Each tile splits evenly into subgroup pieces of whole DPAS blocks (8 rows x the
    lanes), at most 32 subgroups, whose f32 accumulator fits the register share the
    register budget allows (lowering/analysis/register_budget.py): no K-loop copies."""
    gpu = TARGETS[target]
    budget = gpu.accumulator_register_share * gpu.large_grf_count * gpu.grf_bytes
    for tile in gpu.gemm_tiles:
        rows, cols = tile.bm // tile.sm, tile.bn // tile.sn
        assert tile.bm % tile.sm == 0 and tile.bn % tile.sn == 0 and tile.sm * tile.sn <= 32
        assert rows % 8 == 0 and cols % gpu.subgroup_size == 0
        assert rows * cols * 4 <= budget, (tile, rows * cols * 4, budget)
