"""The fused epilogue of ``ops.matmul`` on NVIDIA targets without a GPU: the bias row
broadcast into the ``mma_c`` fragments (layout ``mma_c_row``: each lane loads the columns
its C slots have), erf and tanh in the emitter (checked on the host: the same LLVM IR with
``llvm.exp.f32`` for PTX's ``ex2.approx``), and the bias + gelu GEMM assembled by ptxas.
Results on a GPU: benchmarks/vs_cuda.py's ``matmul`` checks."""
from __future__ import annotations

import ctypes
import math
import re

import numpy as np
import pytest
from llvmlite import binding, ir

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.codegen.nvptx import lane_values
from xetile_dsl.ops import configs
from xetile_dsl.ops.matmul import ACTIVATIONS, matmul_kernel
from xetile_dsl.targets.nvidia import SM90

from .test_nvptx_compile import ptxas_report

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "bias": "f32[:,:]", "c": "f16[:,:]", "K": "i32"}


def test_bias_gelu_gemm_ptx(tmp_path):
    """128x128x32 with a bias row and the erf gelu, launched as ops.matmul does
    (``gemm_launch_options``: 8 warps of 32x64): the bias takes ``mma_c_row`` (no
    shuffles: each lane reads its own columns), the K loop keeps the floor count of
    m16n8k16 a warp ((32/16) x (64/8) x (32/16)), and ptxas: no spill, no stack frame."""
    consts = {"TA": False, "TB": False, "HAS_BIAS": True, "ACT": ACTIVATIONS["gelu"], "ACC": xt.float32,
              "OUT": xt.float16, "BM": 128, "BN": 128, "BK": 32}
    options = configs.gemm_launch_options("sm90", "gelu")
    assert options == {"num_warps": 8}
    k = xd.compile(matmul_kernel, SIG, consts, target="sm90", **options)
    assert 'nv.layout = "mma_c_row"' in k.asm["nv"] and 'nv.warps = "4x2"' in k.asm["nv"] and k.threads == 256
    ptx = k.ptx
    assert len(re.findall(r"mma\.sync\.aligned\.m16n8k16", ptx)) == (32 // 16) * (64 // 8) * 2
    assert "shfl.sync" not in ptx and "ex2.approx" in ptx
    report = ptxas_report(ptx, SM90.ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report
    assert int(re.search(r"Used (\d+) registers", report).group(1)) <= SM90.regs_per_thread


def _host_unary(fn, monkeypatch):
    """``fn`` (lane_values' f32 erf or tanh) JIT-compiled for the host over an array, with
    PTX's ex2.approx (relative error under 2^-22) replaced by llvm.exp.f32."""
    monkeypatch.setattr(lane_values, "_exp", lambda b, x: lane_values.intrinsic(b, "llvm.exp.f32", lane_values.F32, [x]))
    binding.initialize_native_target()
    binding.initialize_native_asmprinter()
    module = ir.Module("host")
    f32p = lane_values.F32.as_pointer()
    func = ir.Function(module, ir.FunctionType(ir.VoidType(), [f32p, f32p, lane_values.I64]), "apply")
    b = ir.IRBuilder(func.append_basic_block("entry"))
    src, dst, n = func.args
    with b.goto_block(b.block):
        loop = func.append_basic_block("loop")
        done = func.append_basic_block("done")
        start = b.block
        b.branch(loop)
        b.position_at_end(loop)
        i = b.phi(lane_values.I64)
        i.add_incoming(ir.Constant(lane_values.I64, 0), start)
        b.store(fn(b, b.load(b.gep(src, [i]))), b.gep(dst, [i]))
        nxt = b.add(i, ir.Constant(lane_values.I64, 1))
        i.add_incoming(nxt, loop)
        b.cbranch(b.icmp_unsigned("<", nxt, n), loop, done)
        b.position_at_end(done)
        b.ret_void()
    engine = binding.create_mcjit_compiler(binding.parse_assembly(str(module)),
                                           binding.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    cfunc = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(engine.get_function_address("apply"))

    def run(x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, np.float32)
        y = np.empty_like(x)
        cfunc(x.ctypes.data, y.ctypes.data, x.size)
        return y
    run.engine = engine   # keep the code alive
    return run


@pytest.mark.parametrize("name,ref,abs_tol", [("_erf", math.erf, 5e-7), ("_tanh", math.tanh, 3e-7)])
def test_erf_tanh_accuracy(name, ref, abs_tol, monkeypatch):
    """Against float64 math over [-6, 6] and tiny arguments: erf within Abramowitz &
    Stegun 7.1.26's 1.5e-7 plus a few f32 roundings of values near 1 (2^-24 each), tanh a
    few ulps of 1; relative error under 2^-18 everywhere (the odd Taylor series near 0,
    where the 1 - tail forms would cancel)."""
    run = _host_unary(getattr(lane_values, name), monkeypatch)
    x = np.concatenate([np.linspace(-6, 6, 20001), np.geomspace(1e-30, 0.2, 2000), -np.geomspace(1e-30, 0.2, 2000),
                        [0.0]]).astype(np.float32)
    got = run(x).astype(np.float64)
    want = np.array([ref(float(v)) for v in x])
    err = np.abs(got - want)
    assert err.max() < abs_tol
    assert (err <= 2.0 ** -18 * np.abs(want)).all()
