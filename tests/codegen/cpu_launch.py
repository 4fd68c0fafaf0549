"""Tiny test helper: build an llvmlite kernel, compile it to SPIR-V and run one
workgroup on Intel's OpenCL CPU device through dpctl.  (The real runtime lives in
xetile_dsl/runtime; this stays minimal so the builtin tests depend only on codegen.)"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from conftest_tools import missing, require_module

from xetile_dsl.codegen.builtins.intel import GLOBAL_PTR, IntelBuiltins
from xetile_dsl.codegen.spirv.backend import SPIRV_DATALAYOUT, SPIRV_TRIPLE
from xetile_dsl.codegen.spirv.translate import emit_spirv
from xetile_dsl.runtime.opencl_icd import setup_intel_cpu_icd

I32 = ir.IntType(32)


def build_kernel(target, emulate: bool, n_buffers: int, body) -> tuple[bytes, ir.Module]:
    """A ``spir_kernel void k(ptr addrspace(1) x n_buffers)`` pinned to the target's
    subgroup size; ``body(bi, builder, args)`` fills it in."""
    module = ir.Module("test")
    module.triple, module.data_layout = SPIRV_TRIPLE, SPIRV_DATALAYOUT
    bi = IntelBuiltins(module, target, emulate)
    kernel = ir.Function(module, ir.FunctionType(ir.VoidType(), [GLOBAL_PTR] * n_buffers), "k")
    kernel.calling_convention = "spir_kernel"
    kernel.set_metadata("intel_reqd_sub_group_size", module.add_metadata([ir.Constant(I32, target.subgroup_size)]))
    builder = ir.IRBuilder(kernel.append_basic_block("entry"))
    body(bi, builder, list(kernel.args))
    builder.ret_void()
    return emit_spirv(str(module)), module


def lane_ptr(builder, base, lane, ty: ir.Type):
    """``&((ty*)base)[lane]``."""
    return builder.gep(base, [lane], source_etype=ty)


_queue = None


def cpu_queue():
    """The Intel OpenCL CPU queue (skips the test when it is unavailable; fails under
    XETILE_REQUIRE_RUNTIMES=1)."""
    global _queue
    if _queue is None:
        if setup_intel_cpu_icd() is None:
            missing("intel-opencl-rt is not installed")
        dpctl = require_module("dpctl")
        try:
            _queue = dpctl.SyclQueue("opencl:cpu")
        except Exception as exc:  # noqa: BLE001
            missing(f"no OpenCL CPU device: {exc}")
    return _queue


def run(spirv: bytes, arrays: list[np.ndarray], lanes: int) -> list[np.ndarray]:
    """Run kernel ``k`` on one subgroup of ``lanes`` work items; returns copies of all
    buffers after the launch."""
    import dpctl.memory
    import dpctl.program

    q = cpu_queue()
    kernel = dpctl.program.create_program_from_spirv(q, spirv, "").get_sycl_kernel("k")
    bufs = []
    for a in arrays:
        raw = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
        padded = np.zeros(max(raw.size, 64), np.uint8)  # dpctl copies whole allocations
        padded[: raw.size] = raw
        buf = dpctl.memory.MemoryUSMDevice(padded.size, alignment=64, queue=q)
        buf.copy_from_host(padded)
        bufs.append(buf)
    event = q.submit(kernel, bufs, [lanes], [lanes])
    event.wait()
    out = []
    for a, buf in zip(arrays, bufs):
        host = np.empty_like(np.ascontiguousarray(a))
        raw = np.zeros(buf.nbytes, np.uint8)
        buf.copy_to_host(raw)
        host.reshape(-1).view(np.uint8)[:] = raw[: host.nbytes]
        out.append(host)
    return out
