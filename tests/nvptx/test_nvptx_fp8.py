"""fp8 (e4m3fn, e5m2) on sm90: ``tile_mma`` operands widened to f16 in registers (the
frontend's exact conversion, ``NvTarget.fp8_mma_input``; each element one
``cvt.rn.f16x2.e4m3x2`` / ``e5m2x2``), then ``mma.sync`` f16; ``ops.matmul`` on fp8 takes
the target's ``fp8`` tile at 8 warps; tutorial 10's block-scaled product (``ldexp`` of
the scales, a replicated scale column reduced into the fragments' layout) builds.

Offline: PTX and ptxas's report; ``ldexp``'s LLVM arithmetic run on the host (llvmlite's
JIT) against numpy.  Not fp8 wgmma (``m64nNk32``): fp8 GEMMs run at the f16 rate.
benchmarks/nv_ops_check.py (``fp8``) runs ops.matmul and tutorial 10 on a GPU."""
from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest
from llvmlite import binding as llvm, ir

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError
from xetile_dsl.targets.nvidia import SM80, SM90

from .test_nvptx_compile import ptxas_report


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_matmul_builds_for_sm90(nv_coverage, fmt, tmp_path):
    """ops.matmul of two fp8 arrays: 8 warps (256 threads), each operand element through the
    fp8 -> f16x2 conversion, mma.sync f16 with f32 accumulation, no wgmma (its f16 plan
    declines fp8); ptxas sm_90 without spill."""
    import ml_dtypes
    from xetile_dsl import ops
    dt = getattr(ml_dtypes, fmt)
    a = np.random.default_rng(0).standard_normal((200, 96)).astype(np.float32).astype(dt)
    b = np.random.default_rng(1).standard_normal((96, 136)).astype(np.float32).astype(dt)
    nv_coverage.CURRENT.kernels.clear()
    ops.matmul(a, b, target="sm90")
    (_, kernel), = nv_coverage.CURRENT.kernels
    ptx = kernel.ptx
    assert kernel.threads == 256
    assert f"cvt.rn.f16x2.{'e4m3x2' if 'e4m3' in fmt else 'e5m2x2'}" in ptx
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx and "wgmma" not in ptx
    report = ptxas_report(ptx, SM90.ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report


def test_fp8_is_refused_before_sm89(nv_coverage):
    """sm80 has no fp8 conversion instruction: a located error naming the NVIDIA targets
    (the coverage script's 'refused'), not PTX that ptxas would reject."""
    import ml_dtypes
    from xetile_dsl import ops
    assert SM90.fp8_cvt and not SM80.fp8_cvt
    e4 = np.ones((32, 64), ml_dtypes.float8_e4m3fn)
    with pytest.raises(CompilationError, match="fp8 values are not supported on NVIDIA targets before sm_89"):
        ops.matmul(e4, np.ones((64, 32), ml_dtypes.float8_e4m3fn), target="sm80")


def test_tutorial_10_builds_for_sm90(nv_coverage):
    """The block-scaled tutorial (e4m3, e5m2 and packed e2m1 operands, e8m0 scales): every
    kernel compiles for sm90 (its result check needs a GPU)."""
    status, detail = nv_coverage.run_case("tutorial 10", dict(nv_coverage.example_cases())["example "
                                                                                       "tutorial_10_block_scaled_matmul"])
    assert status == "ok" and "mx_matmul" in detail, detail


def test_ldexp_arithmetic_on_the_host():
    """``xt.extern("ldexp")``'s LLVM code (three multiplications by 2^k built from bits),
    JIT-compiled for the host: equal to numpy's ldexp for normal results over exponents
    -300 .. 300 and x of both signs, 0 and inf past the f32 range."""
    from xetile_dsl.codegen.nvptx.lane_values import F32, I32, extern

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = ir.Module("ldexp")
    fn = ir.Function(module, ir.FunctionType(F32, [F32, I32]), "ldexp32")
    b = ir.IRBuilder(fn.append_basic_block())
    op = type("Op", (), {"callee": type("A", (), {"data": "ldexp"})()})()
    b.ret(extern(b, op, list(fn.args)))
    target = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), target)
    engine.finalize_object()
    call = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.c_int32)(engine.get_function_address("ldexp32"))
    rng = np.random.default_rng(4)
    xs = np.concatenate([rng.standard_normal(64), [1.0, -3.5, 2.0 ** 100, 2.0 ** -100]]).astype(np.float32)
    for e in (-300, -254, -200, -127, -30, -1, 0, 1, 30, 127, 200, 254, 300):
        want = np.ldexp(xs.astype(np.float64), e)
        for x, w in zip(xs, want):
            got = call(float(x), e)
            if np.isfinite(np.float32(w)) and abs(w) >= 2.0 ** -126:
                assert got == np.float32(w), (x, e, got, w)
            elif abs(w) > 3.4e38:
                assert np.isinf(got)
            elif abs(w) < 2.0 ** -150:
                assert got == 0.0


class _TorchFp8CudaLike:
    """What a torch fp8 CUDA tensor shows a launch: torch's accessors, and a
    ``__cuda_array_interface__`` that raises KeyError (torch's typestr table has no fp8)."""

    is_cuda = True

    def __init__(self, dtype, shape, stride):
        self.dtype, self.shape, self._stride = dtype, shape, stride

    def dim(self):
        return len(self.shape)

    def stride(self):
        return self._stride

    def data_ptr(self):
        return 4096

    def element_size(self):
        return 1

    @property
    def __cuda_array_interface__(self):
        raise KeyError(self.dtype)


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_cuda_tensors_are_read_by_their_accessors(fmt):
    """A launch on torch fp8 CUDA tensors never builds their ``__cuda_array_interface__``
    (on an H200 that raised ``KeyError: torch.float8_e4m3fn`` out of ops.matmul): its
    spec, parameters and layout come from the tensor's accessors."""
    torch = pytest.importorskip("torch")
    from xetile_dsl import nv_launch
    from xetile_dsl.runtime import backend_cuda
    a = _TorchFp8CudaLike(getattr(torch, fmt), (200, 96), (96, 1))
    spec = nv_launch._spec("a", a)
    assert (spec.kind, spec.dtype, spec.ndim) == ("array", nv_launch._TORCH_NAMES[fmt], 2)
    assert [v for v, _ in backend_cuda.array_params(a, "a")] == [4096, 200, 96, 96]
    t = _TorchFp8CudaLike(getattr(torch, fmt), (96, 200), (1, 96))     # a transposed view
    assert backend_cuda.array_layout(t) == (4096, (96, 200), (1, 96), 1)
    with pytest.raises(Exception, match="rows must be contiguous"):
        backend_cuda.array_params(t, "t")


@xd.jit
def _to_fp8(x, y, OUT: xt.constexpr, SAT: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [4, 64]))
    xt.store_tile(xt.astype(v, OUT, saturate=SAT), xt.init_tile(y, [0, 0], [4, 64]))


@pytest.mark.parametrize("fmt,sig", [("float8_e4m3fn", "f8e4m3fn"), ("float8_e5m2", "f8e5m2")])
def test_conversions_to_fp8_take_the_shared_integer_code(fmt, sig, tmp_path):
    """f32 -> fp8 on sm90 is ``codegen/fp8.from_f32``, the integer rounding the Intel
    targets run (checked against ml_dtypes on the CPU device): no PTX fp8 conversion
    (whose ``.satfinite`` would clamp where ml_dtypes gives NaN or inf), one byte stored a
    slot; saturation is the frontend's clamp (``max.NaN`` / ``min.NaN``) before it."""
    for sat in (False, True):
        k = xd.compile(_to_fp8, {"x": "f32[:,:]", "y": f"{sig}[:,:]"}, {"OUT": getattr(xt, fmt), "SAT": sat},
                       target="sm90")
        assert "e4m3x2" not in k.ptx and "e5m2x2" not in k.ptx
        assert k.ptx.count("st.global.u8") + k.ptx.count("st.global.b8") == 4 * 64 // 32
        assert ("max.NaN.f32" in k.ptx) == sat
        assert "error" not in ptxas_report(k.ptx, "sm_90", tmp_path).lower()


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2"])
def test_conversion_to_fp8_on_the_host_matches_ml_dtypes(fmt):
    """The NVIDIA emitter's ``arith.truncf`` f32 -> fp8 (``lane_values.convert``),
    JIT-compiled for the host: the bits ml_dtypes gives for every f16 value (as f32,
    exact) and for f32 values on, next to and halfway between the format's values (its
    ties, subnormals, largest finite value), infinities, NaN and values far past the range
    (overflow: NaN for e4m3fn, inf for e5m2)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from xdsl.dialects.builtin import Float8E4M3FNType, Float8E5M2Type, f32
    from xetile_dsl.codegen.nvptx.lane_values import F32, convert
    dst_t = {"float8_e4m3fn": Float8E4M3FNType(), "float8_e5m2": Float8E5M2Type()}[fmt]
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = ir.Module("to_fp8")
    i8 = ir.IntType(8)
    fn = ir.Function(module, ir.FunctionType(i8, [F32]), "to_fp8")
    b = ir.IRBuilder(fn.append_basic_block())
    op = type("Op", (), {"name": "arith.truncf"})()
    b.ret(convert(b, op, fn.args[0], f32, dst_t, i8))
    target = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), target)
    engine.finalize_object()
    call = ctypes.CFUNCTYPE(ctypes.c_uint8, ctypes.c_float)(engine.get_function_address("to_fp8"))
    grid = np.sort(np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, fmt)).astype(np.float64))
    grid = grid[np.isfinite(grid)]
    halves = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        xs = np.concatenate([grid, np.nextafter(grid, np.inf), np.nextafter(grid, -np.inf), (grid[:-1] + grid[1:]) / 2,
                             halves, [np.inf, -np.inf, np.nan, 1e30, -1e30, 1e-30, 0.0, -0.0]]).astype(np.float32)
        want = xs.astype(getattr(ml_dtypes, fmt)).view(np.uint8)
    got = np.array([call(float(x)) for x in xs], np.uint8)
    nan = np.isnan(xs)
    wrong = (got != want) & ~nan
    assert not wrong.any(), [(float(x), int(g), int(w)) for x, g, w in zip(xs[wrong][:5], got[wrong][:5], want[wrong][:5])]
    assert np.isnan(got[nan].view(getattr(ml_dtypes, fmt)).astype(np.float32)).all()
