"""Subgroup-level transposes compiled by Intel's offline compiler: a transpose of a loaded
tile is a transposed 2D block read on pvc (``d32t``, no SLM); a computed one too large for
registers goes through SLM (stores, reads, one barrier; smaller ones are lane shuffles,
tests/isa/test_register_transpose_isa.py); as tile_mma's B operand neither spills."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
from kernels.subgroup_transposes import (matmul_bt_computed_kernel, matmul_bt_loaded_kernel,
                                             transpose_computed_kernel, transpose_loaded_kernel)
from xetile_dsl.tools import ocloc

SLM_ACCESS = r"\b(?:load|store)\.slm\b"


def _copy(kernel, dtype, target="pvc", shape=(32, 16)):
    return xd.compile(kernel, {"x": f"{dtype}[:,:]", "y": f"{dtype}[:,:]"}, dict(zip("MN", shape)), target=target)


def _gemm(kernel, target="pvc"):
    tiles = (32, 32, 32) if target == "pvc" else (16, 16, 32)
    sig = {"a": "f16[:,:]", "bt": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
    return xd.compile(kernel, sig, dict(zip(("BM", "BN", "BK"), tiles)), target=target)


def _name(kernel) -> str:
    return kernel.fn.__name__


@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_loaded_transpose_is_a_transposed_block_read(dtype, ocloc_path):
    compiled = _copy(transpose_loaded_kernel, dtype)
    isa = compiled.asm["isa"]
    assert ocloc.check_isa(compiled.asm["zebin"], _name(transpose_loaded_kernel), expect_dpas=False,
                           expect_block2d=True, expect_simd=16) == []
    assert ocloc.count(isa, r"load_block2d\.ugm\.d32t\b") == 4  # 32x16 source: 4 blocks of 8x16
    assert ocloc.count(isa, SLM_ACCESS) == 0


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_computed_transpose_too_large_for_registers_goes_through_slm(dtype, ocloc_path):
    compiled = _copy(transpose_computed_kernel, dtype, shape=(64, 64))  # 16 KB as 32-bit words
    isa, zebin = compiled.asm["isa"], compiled.asm["zebin"]
    name = _name(transpose_computed_kernel)
    assert ocloc.check_isa(zebin, name, expect_dpas=False, expect_block2d=True, expect_simd=16) == []
    assert zebin.execution_env(name).get("slm_size") >= 64 * 64 * (4 if dtype == "f32" else 2)
    assert ocloc.count(isa, r"\bstore\.slm\b") > 0 and ocloc.count(isa, r"\bload\.slm\b") > 0
    assert ocloc.count(isa, r"\bsync\.bar\b") == 1


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_gemm_with_transposed_b_does_not_spill(target, ocloc_path):
    simd = 16 if target == "pvc" else 8
    for kernel in (matmul_bt_loaded_kernel, matmul_bt_computed_kernel):
        compiled = _gemm(kernel, target)
        assert ocloc.check_isa(compiled.asm["zebin"], _name(kernel), expect_dpas=True, expect_simd=simd) == []
        loop = ocloc.hot_loop(compiled.asm["isa"])
        if target == "pvc" and kernel is matmul_bt_loaded_kernel:
            assert re.search(r"load_block2d\.ugm\.d32t\b", loop), "B^T is not a transposed 32-bit block read"
        if kernel is matmul_bt_computed_kernel:  # transposed in registers (lane shuffles)
            assert ocloc.count(loop, SLM_ACCESS) == 0, "the computed B^T goes through SLM"
