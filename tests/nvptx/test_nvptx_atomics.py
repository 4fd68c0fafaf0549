"""XeTile's atomics on sm90 without a GPU (codegen/nvptx/atomic_memory.py): the PTX atomics the
NVPTX backend makes of the emitter's LLVM ones, one an element a lane holds, scalar ones
once a program (thread 0) with the old value shuffled to the warp, products as a
compare-exchange loop; ptxas takes each.  The values on a GPU:
``benchmarks/nv_ops_check.py atomics`` (many programs into one tile, a ticket counter)."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.kernels import atomics_check as A
from xetile_dsl.targets.nvidia import SM90

from .test_nvptx_compile import ptxas_report

IO = {"x": "f32[:,:]", "out": "f32[:,:]"}
#: elements of a 4x64 tile a lane holds (256 over 32 lanes)
PER_LANE = 4 * 64 // 32


@pytest.mark.parametrize("kind,sig,form", [
    ("add", IO, r"atom(\.\w+)*\.global\.add\.f32"),
    ("max", {"x": "i32[:,:]", "out": "i32[:,:]"}, r"atom(\.\w+)*\.global\.max\.s32"),
    ("mul", IO, r"atom(\.\w+)*\.global\.cas\.b32"),
], ids=["add f32", "max i32", "mul f32"])
def test_tile_atomics_one_an_element(kind, sig, form, tmp_path):
    ptx = xd.compile(A.tile_rmw_kernel, sig, {"KIND": kind}, target="sm90").ptx
    assert len(re.findall(form, ptx)) == PER_LANE
    if kind == "mul":                # the loop: a compare-exchange, its success tested, a branch back
        assert ptx.count("mul.rn.f32") + ptx.count("mul.f32") >= PER_LANE and "setp.eq" in ptx
    assert "error" not in ptxas_report(ptx, SM90.ptx_arch, tmp_path).lower()


def test_a_scalar_atomic_is_once_a_program(tmp_path):
    ptx = xd.compile(A.ticket_kernel, {"count": "i32[:]", "tickets": "i32[:,:]"}, {}, target="sm90").ptx
    assert len(re.findall(r"atom(\.\w+)*\.global\.add\.u32", ptx)) == 1
    assert "%tid.x" in ptx and "shfl.sync.idx.b32" in ptx       # thread 0's, then every lane's
    assert "error" not in ptxas_report(ptx, SM90.ptx_arch, tmp_path).lower()


@xd.jit
def _fenced_flag(x, flag):
    xt.store_tile(xt.load_tile(xt.init_tile(x, [0, 0], [4, 64])) * 2.0, xt.init_tile(x, [0, 0], [4, 64]))
    xt.fence("release")
    xt.atomic_xchg(flag, [0], 1, sem="relaxed")


def test_fence_and_orders():
    ptx = xd.compile(_fenced_flag, {"x": "f32[:,:]", "flag": "i32[:]"}, {}, target="sm90").ptx
    assert re.search(r"fence\.(acq_rel|sc)", ptx)
    assert re.search(r"atom(\.relaxed)?(\.sys)?\.global\.exch\.b32", ptx)


@xd.jit
def _replicated_atomic(out, old, R: xt.constexpr, C: xt.constexpr):
    was = xt.atomic_rmw("add", xt.full([R, C], 1.0, xt.float32), xt.init_tile(out, [0, 0], [R, C]))
    xt.store_tile(was, xt.init_tile(old, [0, 0], [R, C]))


@pytest.mark.parametrize("rows,cols", [(1, 1), (4, 8), (2, 24)])
def test_an_atomic_of_a_narrow_tile_is_one_a_element(rows, cols, tmp_path):
    """A tile narrower than the warp is held whole by every lane: element i's atomic is lane
    i mod 32's alone (guarded by its lane id), its old value shuffled from that lane."""
    ptx = xd.compile(_replicated_atomic, {"out": "f32[:,:]", "old": "f32[:,:]"}, {"R": rows, "C": cols},
                     target="sm90").ptx
    assert len(re.findall(r"atom(\.\w+)*\.global\.add\.f32", ptx)) == rows * cols
    assert len(re.findall(r"shfl\.sync\.idx\.b32", ptx)) == rows * cols
    assert "error" not in ptxas_report(ptx, SM90.ptx_arch, tmp_path).lower()


@pytest.mark.parametrize("kind,dtype", [("addf", "f32"), ("mulf", "f32"), ("maximumf", "f32"), ("minnumf", "f32"),
                                        ("addi", "i32"), ("muli", "i32"), ("maxs", "i32"), ("minu", "i32"),
                                        ("assign", "i32"), ("xori", "i32"), ("cmpxchg", "i32")])
def test_one_atomic_on_the_host(kind, dtype):
    """``atomic_memory.one`` (an ``atomicrmw``, a compare-exchange loop, or a ``cmpxchg``),
    JIT-compiled for the host and run on one element: the old value comes back and the
    element holds ``kind(old, v)`` (numpy's), for values of both signs, zeros and NaN."""
    import ctypes

    import numpy as np
    from llvmlite import binding as llvm, ir

    from xetile_dsl.codegen.nvptx import atomic_memory
    from xetile_dsl.codegen.nvptx.lane_values import F32, I32
    t, ct, nt = (F32, ctypes.c_float, np.float32) if dtype == "f32" else (I32, ctypes.c_int32, np.int32)
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = ir.Module("one")
    fn = ir.Function(module, ir.FunctionType(t, [ir.PointerType(), t, t]), "one")
    b = ir.IRBuilder(fn.append_basic_block())
    ptr, v, cmp = fn.args
    b.ret(atomic_memory.one(b, kind, ptr, v, "acq_rel", None, cmp if kind == "cmpxchg" else None))
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)),
                                        llvm.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    call = ctypes.CFUNCTYPE(ct, ctypes.POINTER(ct), ct, ct)(engine.get_function_address("one"))
    values = [3.5, -2.0, 0.0, -0.0, 7.25, float("nan")] if dtype == "f32" else [5, -7, 0, 2 ** 31 - 1, -2 ** 31, 12]
    ref = {"addf": lambda a, x: a + x, "mulf": lambda a, x: a * x, "maximumf": np.maximum, "minnumf": np.fmin,
           "addi": lambda a, x: a + x, "muli": lambda a, x: a * x, "maxs": np.maximum,
           "minu": lambda a, x: np.minimum(a.view(np.uint32), x.view(np.uint32)).view(np.int32),
           "assign": lambda a, x: x, "xori": np.bitwise_xor}
    with np.errstate(over="ignore", invalid="ignore"):
        for a in values:
            for x in values:
                cell = ct(a)
                old = call(ctypes.byref(cell), ct(x), ct(a if x == 5 else a + 1))
                a_, x_ = nt(a), nt(x)
                want = (x_ if x == 5 else a_) if kind == "cmpxchg" else ref[kind](a_, x_)
                assert np.array_equal(nt(old), a_, equal_nan=True), (a, x, old)
                assert np.array_equal(nt(cell.value), nt(want), equal_nan=True), (kind, a, x, cell.value, want)


@xd.jit
def _bf16_atomics(total, old, x, KIND: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [2, 64]))
    xt.store_tile(xt.atomic_rmw(KIND, v, xt.init_tile(total, [0, 0], [2, 64])), xt.init_tile(old, [0, 0], [2, 64]))


@pytest.mark.parametrize("kind", ["add", "max", "min"])
def test_bf16_atomics_compute_in_f32(kind, tmp_path):
    """bf16 values are their i16 bits in the emitter: a bf16 atomic is a compare-exchange
    loop on them (LLVM's 16-bit cmpxchg: a 32-bit CAS of the word) whose new value is computed in f32 and rounded back to bf16
    (it built invalid LLVM IR, an f32 operation on i16, before)."""
    ptx = xd.compile(_bf16_atomics, {"total": "bf16[:,:]", "old": "bf16[:,:]", "x": "bf16[:,:]"}, {"KIND": kind},
                     target="sm90").ptx
    assert re.search(r"atom(\.\w+)*\.cas\.b(16|32)", ptx) and "cvt.rn.bf16.f32" in ptx
    assert "error" not in ptxas_report(ptx, SM90.ptx_arch, tmp_path).lower()
