"""Inspection: every stage of a compiled kernel is MLIR text that parses back and
verifies; the GEMM runs through both launchers; tile_mma works without an accumulator."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.dialects import parse_module, print_module
from xetile_dsl.kernels.matmul import matmul_kernel

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}


@pytest.mark.parametrize("target", ["pvc", "arc", "cpu-pvc", "cpu-arc"])
def test_stages_are_mlir_text_that_parses_back(target):
    k = xd.compile(matmul_kernel, SIG, {"BM": 32, "BN": 32, "BK": 16}, target=target)
    for stage, marker in (("xetile", "xetile.tile_mma"), ("xegpu", "xegpu.dpas"), ("simt", "#xegpu.sg_map")):
        text = k.asm[stage]
        assert marker in text
        module = parse_module(text)
        module.verify()
        assert print_module(module) == text  # printing is a fixed point of parse/print
    assert k.asm["spirv"][:4] == b"\x03\x02\x23\x07"
    assert "spir_kernel" in k.asm["llvm"]


def test_simt_fragments_follow_the_target_sg_map():
    pvc = xd.compile(matmul_kernel, SIG, {"BM": 8, "BN": 16, "BK": 16}, target="pvc").asm["simt"]
    arc = xd.compile(matmul_kernel, SIG, {"BM": 8, "BN": 8, "BK": 16}, target="arc").asm["simt"]
    assert "wi_layout = [1, 16], wi_data = [2, 1]" in pvc and "vector<8x2xf16>" in pvc   # B in VNNI
    assert "wi_layout = [1, 16], wi_data = [1, 1]" in pvc and "vector<8x1xf16>" in pvc   # A
    assert "wi_layout = [1, 8], wi_data = [1, 2]" in arc                                  # A packed in dwords


@xd.jit
def mma_without_accumulator(a, b, c, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    ta = xt.init_tile(a, [xt.program_id(0) * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, xt.program_id(1) * BN], [BK, BN])
    out = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb))
    xt.store_tile(out, xt.init_tile(c, [xt.program_id(0) * BM, xt.program_id(1) * BN], [BM, BN]))


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
def test_tile_mma_without_accumulator(flavour):
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (64, 32)).astype(np.float16)
    b = rng.integers(-3, 4, (32, 48)).astype(np.float16)
    c = np.zeros((64, 48), np.float32)
    mma_without_accumulator.on(f"cpu-{flavour}")[(2, 3)](a, b, c, BM=32, BN=16, BK=32)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("backend", ["dpctl", "pyopencl"])
def test_gemm_through_each_launcher(backend, tmp_path):
    script = textwrap.dedent("""
        import numpy as np
        from xetile_dsl.kernels.matmul import matmul
        from xetile_dsl.runtime.devices import get_device
        rng = np.random.default_rng(0)
        a = rng.integers(-2, 3, (96, 64)).astype(np.float16)
        b = rng.integers(-2, 3, (64, 80)).astype(np.float16)
        c = matmul(a, b, BM=32, BN=16, BK=16, target="cpu-pvc")
        assert (c == a.astype(np.float32) @ b.astype(np.float32)).all()
        print(get_device().backend)
    """)
    env = dict(os.environ, XETILE_BACKEND=backend, XETILE_CACHE_DIR=str(tmp_path))
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [backend]
