"""int8/uint8 and tf32 tile_mma compiled by Intel's offline compiler: DPAS with the right
operand types in the hot loop, no spills, no unresolved calls (default 128-GRF mode on
pvc, bmg and lnl, the target's 256-GRF mode on dg2-g10)."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.kernels.matmul import matmul_acc_kernel
from xetile_dsl.targets import get_target
from xetile_dsl.tools import ocloc

#: ISA operand type of each DPAS input (IGA spelling)
ISA_TYPE = {"i8": "b", "u8": "ub", "f32": "tf32"}


def _compile(target, ta, tb, tiles):
    acc = "f32" if ta == "f32" else "i32"
    sig = {"a": f"{ta}[:,:]", "b": f"{tb}[:,:]", "c": f"{acc}[:,:]", "K": "i32"}
    BM, BN, BK = tiles
    return xd.compile(matmul_acc_kernel, sig, {"BM": BM, "BN": BN, "BK": BK,
                                              "ACC": xt.float32 if acc == "f32" else xt.int32}, target=target)


@pytest.mark.parametrize("target,ta,tb,tiles,blocks", [
    ("pvc", "i8", "i8", (32, 32, 64), 16), ("pvc", "u8", "i8", (32, 32, 64), 16),
    ("pvc", "f32", "f32", (32, 32, 16), 16), ("pvc", "f32", "f32", (16, 32, 32), 16),
    ("bmg", "i8", "i8", (32, 32, 64), 16), ("lnl", "u8", "i8", (32, 32, 64), 16),
    ("bmg", "f32", "f32", (32, 32, 16), 16), ("lnl", "f32", "f32", (32, 32, 16), 16),
    ("arc", "i8", "i8", (16, 16, 32), 4), ("arc", "u8", "u8", (16, 32, 32), 8),
])
def test_dpas_in_hot_loop(target, ta, tb, tiles, blocks, ocloc_path):
    kernel = _compile(target, ta, tb, tiles)
    zebin = kernel.asm["zebin"]
    gpu = get_target(target)
    simd = gpu.subgroup_size
    assert ocloc.check_isa(zebin, "matmul_acc_kernel", expect_dpas=True, expect_block2d=gpu.has_2d_block_io,
                           expect_simd=simd) == []
    loop = ocloc.hot_loop(kernel.asm["isa"])
    dpas = [ln for ln in loop.splitlines() if "dpas" in ln]
    assert len(dpas) >= blocks  # (BM/8) x (BN/N) x (BK/K) DPAS per K step
    assert all(f":{ISA_TYPE[tb]} " in ln and f":{ISA_TYPE[ta]} " in ln for ln in dpas), dpas[:2]
    assert all(f"({simd}|M0)" in ln for ln in dpas)
    if gpu.has_2d_block_io:
        assert ocloc.count(loop, ocloc.LOAD_BLOCK2D) >= 1
    grf = zebin.execution_env("matmul_acc_kernel")["grf_count"]
    assert grf == (256 if "large-register-file" in gpu.build_options else 128)
