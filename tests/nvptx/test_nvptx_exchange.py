"""Values moved between fragment layouts across a program's warps on sm90 without a GPU
(``warp_ops.exchange``: an mma result as the next one's B operand, or transposed into
its A operand, in a program of several warps, through a shared array).

Checked here: the emitted exchange itself, JIT-compiled for this CPU (its shared array as
plain memory, its barriers dropped, every thread of the program run twice in turn: the
writes repeat the same values, so the second round reads what every thread wrote) moves
each element to every thread that holds it in the new layout (the fragments' lane
positions and warp parts, the layouts GPU-run mma kernels use); and ptxas's assembly of
the kernels.  benchmarks/nv_ops_check.py's "mma result as B" and "transposed mma result
as A" cases run them on a GPU against float64."""
from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest
from llvmlite import ir

import xetile_dsl as xd
from xetile_dsl.codegen.nvptx import warp_ops
from xetile_dsl.codegen.nvptx.lane_values import F32, I64, Vec
from xetile_dsl.codegen.nvptx.layouts import Layout
from xetile_dsl.codegen.nvptx.warp_ops import lane_positions
from xetile_dsl.errors import CompilationError
from xetile_dsl.targets.nvidia import SM90
from xdsl.dialects.builtin import Float32Type

from .host_jit import host_engine
from .test_nvptx_compile import ptxas_report

WARP = 32
SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "f": "f16[:,:]", "d": "f32[:,:]"}
SIG_T = {"a": "f16[:,:]", "b": "f16[:,:]", "e": "f16[:,:]", "d": "f32[:,:]"}


def _host_exchange(src: Layout, dst: Layout, swap: bool):
    """``exchange`` from ``src`` to ``dst`` as ``void f(i64 lane, i64 warp, float *in,
    float *out)`` for this CPU: the thread's slots read from ``in``, its new slots written
    to ``out``."""
    module = ir.Module("exchange")
    ptr = ir.PointerType(F32)
    f = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, I64, ptr, ptr]), "f")
    lane, warp, src_slots, dst_slots = f.args
    b = ir.IRBuilder(f.append_basic_block())
    vals = [b.load(b.gep(src_slots, [ir.Constant(I64, i)])) for i in range(len(src.slots()))]
    out = warp_ops.exchange(b, lane, warp, Vec(src, Float32Type(), vals), dst, None, swap, in_loop=True,
                            limit=SM90.static_smem_per_block)
    for i, v in enumerate(out.slots):
        b.store(v, b.gep(dst_slots, [ir.Constant(I64, i)]))
    b.ret_void()
    text = str(module)
    assert text.count('asm sideeffect "bar.sync 0;"') == 2        # before the writes (in a loop) and after
    text = re.sub(r'\s*call void asm sideeffect "bar\.sync 0;", "~\{memory\}"\(\)', "", text)
    text = re.sub(r"\s*addrspace\(\d\)", "", text)
    engine = host_engine(text)
    fp = ctypes.POINTER(ctypes.c_float)
    call = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, fp, fp)(engine.get_function_address("f"))
    return engine, call


def _held(layout: Layout, x: np.ndarray, w: int) -> np.ndarray:
    """Warp w's lanes' slots of ``x`` (the whole tile) in ``layout``: [32, slots]."""
    step_r, step_c = layout.warp_steps()
    r0, c0 = (w // layout.warps[1]) * step_r, (w % layout.warps[1]) * step_c
    return np.array([[x[r0 + r, c0 + c] for r, c in lane] for lane in lane_positions(layout)], dtype=np.float32)


@pytest.mark.parametrize("src,dst,swap", [
    (Layout("mma_c", (64, 64), (2, 2)), Layout("mma_b", (64, 64), (2, 2)), False),
    (Layout("mma_c", (64, 64), (4, 1)), Layout("mma_b", (64, 64), (4, 1)), False),
    (Layout("mma_c", (64, 32), (2, 2)), Layout("mma_a", (32, 64), (2, 2)), True),
    (Layout("mma_c", (64, 64), (2, 1)), Layout("mma_a", (64, 64), (2, 1)), True),
    (Layout("mma_c_row", (1, 64), (4, 2)), Layout("mma_c_row", (1, 64), (4, 2)), False),
])
def test_every_thread_gets_its_new_slots(src, dst, swap):
    engine, call = _host_exchange(src, dst, swap)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(src.shape).astype(np.float32)
    want = x.T if swap else x
    warps = src.warps[0] * src.warps[1]
    ins = [_held(src, x, w) for w in range(warps)]
    outs = [np.full((WARP, len(dst.slots())), np.nan, dtype=np.float32) for _ in range(warps)]
    fp = ctypes.POINTER(ctypes.c_float)
    for _round in range(2):
        for w in range(warps):
            for lane in range(WARP):
                row_in, row_out = np.ascontiguousarray(ins[w][lane]), outs[w][lane]
                call(lane, w, row_in.ctypes.data_as(fp), row_out.ctypes.data_as(fp))
                outs[w][lane] = row_out
    for w in range(warps):
        np.testing.assert_array_equal(outs[w], _held(dst, want, w))
    del engine


@pytest.mark.parametrize("warps", [2, 4])
def test_mma_result_as_b_in_several_warps_assembles(check, warps, tmp_path):
    """One shared array of the f16 [64, 64] result (8 KB), written once and read by each
    warp's B part, between two barriers; 4 warps: no spill."""
    k = xd.compile(check._mma_as_b_kernel, SIG, {"BM": 64, "BN": 64, "BK": 64}, target="sm90", num_warps=warps)
    assert k.threads == warps * WARP
    assert len(re.findall(r"\.shared .*nv_exchange\w*\[8192\]", k.ptx)) == 1, re.findall(r"\.shared.*", k.ptx)
    report = ptxas_report(k.ptx, "sm_90", tmp_path)
    assert warps == 2 or re.search(r"\b0 bytes spill stores", report), report


def test_transposed_mma_result_as_a_in_four_warps_assembles(check, tmp_path):
    k = xd.compile(check._mma_transposed_as_a_kernel, SIG_T, {"BM": 64, "BN": 64, "BK": 64}, target="sm90",
                   num_warps=4)
    assert k.threads == 128 and "nv_exchange" in k.ptx
    report = ptxas_report(k.ptx, "sm_90", tmp_path)
    assert re.search(r"\b0 bytes spill stores", report), report


def test_an_exchange_past_its_shared_memory_is_a_located_error(check):
    with pytest.raises(CompilationError, match=r"goes through shared memory, at most 32 KB") as info:
        xd.compile(check._mma_as_b_kernel, {**SIG, "f": "f16[:,:]"}, {"BM": 256, "BN": 128, "BK": 256},
                   target="sm90", num_warps=8)
    assert "nv_ops_check.py:" in str(info.value)
