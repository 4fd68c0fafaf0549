"""The math functions NVIDIA targets take from CUDA's libdevice, without a GPU.

* Each math op of the emitter's libdevice tables, linked exactly as a kernel links it
  (:func:`libdevice.link`, then the NVPTX -O3 pipeline, which folds libdevice's
  ``__nvvm_reflect`` and inlines what is called), is run on the host: the few NVVM
  intrinsics left are given host definitions (the approximate ones exact), the module is
  JIT-compiled for this CPU and compared with numpy in f64.  This checks that every op is
  mapped to the right function and that linking works; the functions' own accuracy is
  NVIDIA's, bounded by the CUDA C Programming Guide's table (at most 4 ulp for these
  f32 functions; 8 ulp asserted, allowing the host's exact stand-ins for the approximate
  instructions; ``.rz`` arithmetic is rounded toward zero through f64; fmod exact).
* Kernels calling the xt functions compile for sm90 and assemble with ptxas, with no
  ``__nv_`` call left in the PTX (all inlined)."""
from __future__ import annotations

import ctypes
import math
import re

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import knobs
from xetile_dsl.codegen.nvptx import lane_values, libdevice
from xetile_dsl.codegen.nvptx.ptx import TRIPLE, _machine
from xetile_dsl.errors import CompilationError, LoweringError
from xetile_dsl.targets.nvidia import SM90

from .host_jit import host_engine
from .test_nvptx_compile import ptxas_report


@pytest.fixture(scope="module", autouse=True)
def _libdevice():
    """libdevice comes with ptxas (the nvidia-cuda-nvcc wheel of [test]): the tests skip
    without it, and fail under XETILE_REQUIRE_PTXAS=1 (CI)."""
    if libdevice.find() is None:
        if knobs.REQUIRE_PTXAS.get():
            pytest.fail("XETILE_REQUIRE_PTXAS=1 but no libdevice (the nvidia-cuda-nvcc wheel)", pytrace=False)
        pytest.skip("no libdevice (the nvidia-cuda-nvcc wheel of [test])")

F32 = ir.FloatType()

#: op -> (numpy function in f64, input domain as (low, high) per argument)
NUMPY = {
    "math.atan": (np.arctan, [(-20, 20)]), "math.asin": (np.arcsin, [(-1, 1)]), "math.acos": (np.arccos, [(-1, 1)]),
    "math.atanh": (np.arctanh, [(-0.99, 0.99)]), "math.asinh": (np.arcsinh, [(-20, 20)]),
    "math.acosh": (np.arccosh, [(1, 40)]), "math.sinh": (np.sinh, [(-10, 10)]), "math.cosh": (np.cosh, [(-10, 10)]),
    "math.tan": (np.tan, [(-1.5, 1.5)]), "math.expm1": (np.expm1, [(-5, 5)]), "math.log1p": (np.log1p, [(-0.9, 30)]),
    "math.log10": (np.log10, [(1e-3, 1e4)]), "math.cbrt": (np.cbrt, [(-100, 100)]),
    "math.erfc": (None, [(-3, 3)]),
    "math.powf": (np.power, [(0.1, 8), (-4, 4)]), "math.atan2": (np.arctan2, [(-5, 5), (-5, 5)]),
    "arith.remf": (np.fmod, [(-50, 50), (0.5, 7)]),
}
_HOST = """
define internal float @host_nvvm_add.rn.f(float %a, float %b) { %r = fadd float %a, %b
  ret float %r }
define internal float @host_rz(double %d) {
  %t = fptrunc double %d to float
  %back = fpext float %t to double
  %ad = call double @llvm.fabs.f64(double %d)
  %at = call double @llvm.fabs.f64(double %back)
  %over = fcmp ogt double %at, %ad
  %bits = bitcast float %t to i32
  %less = sub i32 %bits, 1
  %down = bitcast i32 %less to float
  %r = select i1 %over, float %down, float %t
  ret float %r }
define internal float @host_nvvm_mul.rn.f(float %a, float %b) { %r = fmul float %a, %b
  ret float %r }
define internal float @host_nvvm_div.approx.f(float %a, float %b) { %r = fdiv float %a, %b
  ret float %r }
define internal float @host_nvvm_ex2.approx.f32(float %a) { %r = call float @llvm.exp2.f32(float %a)
  ret float %r }
define internal float @host_nvvm_ex2.approx.ftz.f32(float %a) { %r = call float @llvm.exp2.f32(float %a)
  ret float %r }
define internal float @host_nvvm_lg2.approx.f(float %a) { %r = call float @llvm.log2.f32(float %a)
  ret float %r }
define internal float @host_nvvm_fabs.f32(float %a) { %r = call float @llvm.fabs.f32(float %a)
  ret float %r }
define internal float @host_nvvm_round.f(float %a) { %r = call float @llvm.rint.f32(float %a)
  ret float %r }
define internal i32 @host_nvvm_f2i.rn(float %a) { %t = call float @llvm.rint.f32(float %a)
  %r = fptosi float %t to i32
  ret i32 %r }
define internal float @host_nvvm_sqrt.approx.f(float %a) { %r = call float @llvm.sqrt.f32(float %a)
  ret float %r }
define internal float @host_nvvm_rsqrt.approx.ftz.f(float %a) { %s = call float @llvm.sqrt.f32(float %a)
  %r = fdiv float 1.0, %s
  ret float %r }
define internal float @host_rcp(float %a) { %r = fdiv float 1.0, %a
  ret float %r }
define internal { i32, i32 } @host_mad_wide(i32 %a, i32 %b, i32 %c) {
  %x = zext i32 %a to i64
  %y = zext i32 %b to i64
  %z = zext i32 %c to i64
  %p = mul i64 %x, %y
  %s = add i64 %p, %z
  %lo = trunc i64 %s to i32
  %h = lshr i64 %s, 32
  %hi = trunc i64 %h to i32
  %r0 = insertvalue { i32, i32 } undef, i32 %lo, 0
  %r1 = insertvalue { i32, i32 } %r0, i32 %hi, 1
  ret { i32, i32 } %r1 }
declare float @llvm.exp2.f32(float)
declare double @llvm.fabs.f64(double)
declare float @llvm.log2.f32(float)
declare float @llvm.fabs.f32(float)
declare float @llvm.rint.f32(float)
declare float @llvm.sqrt.f32(float)
"""
#: the .rz (toward zero) arithmetic: exact in f64 (a product or sum of two f32s; an fma's sum
#: rounded once more), then rounded toward zero to f32 by host_rz
_RZ = {"add.rz.f": (2, "%s = fadd double %x0, %x1"), "mul.rz.f": (2, "%s = fmul double %x0, %x1"),
       "fma.rz.f": (3, "%p = fmul double %x0, %x1\n  %s = fadd double %p, %x2")}
_HOST += "".join(
    f"define internal float @host_nvvm_{name}(" + ", ".join(f"float %a{i}" for i in range(n)) + ") {\n"
    + "".join(f"  %x{i} = fpext float %a{i} to double\n" for i in range(n))
    + f"  {body}\n  %r = call float @host_rz(double %s)\n  ret float %r }}\n" for name, (n, body) in _RZ.items())


def _erfc(x):
    return np.vectorize(math.erfc)(x)


def _host_jit(module: ir.Module):
    """``module`` (calling ``__nv_*`` functions) linked with libdevice and optimised exactly
    as a kernel is, with the NVVM intrinsics left given host definitions, JIT-compiled for
    this CPU."""
    linked = llvm.parse_assembly(str(module))
    libdevice.link(linked)
    machine = _machine(SM90.ptx_arch, SM90.ptx_features)
    pb = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=3))
    pb.getModulePassManager().run(linked, pb)
    text = re.sub(r"@llvm\.nvvm\.", "@host_nvvm_", str(linked))
    text = "\n".join(line for line in text.splitlines()
                     if not line.startswith("target") and not (line.startswith("declare") and "@host_nvvm_" in line))
    text = re.sub(r'"target-(cpu|features)"="[^"]*"', "", text)
    text = re.sub(r"\s*addrspace\(\d\)", "", text)        # libdevice's tables: plain memory on the host
    # libdevice's inline PTX: a reciprocal, and a 32 x 32 + 32 -> 64-bit multiply-add
    text = text.replace('asm "rcp.approx.ftz.f32 $0,$1;", "=f,f"', "@host_rcp")
    text = re.sub(r'asm "\{\\0A\\09mad\.lo\.cc\.u32[^"]*", "=r,=r,r,r,r"', "@host_mad_wide", text)
    assert " asm " not in text, re.findall(r'asm "[^"]*"', text)
    used = set(re.findall(r"@(host_nvvm_[\w.]+)\(", text))
    defined = set(re.findall(r"define internal \w+ @(host_nvvm_[\w.]+)\(", _HOST))
    assert used <= defined, f"NVVM intrinsics without a host definition: {sorted(used - defined)}"
    return host_engine(text + _HOST)


@pytest.fixture(scope="module")
def host_functions(_libdevice):
    """{op: ctypes function} of every libdevice op, f32."""
    module = ir.Module("libdevice_host")
    module.triple = TRIPLE
    ops = {**lane_values.LIBDEVICE_UNARY, **lane_values.LIBDEVICE_BINARY}
    assert set(ops) == set(NUMPY), "a libdevice op without a host check (add it to NUMPY)"
    for op, name in ops.items():
        arity = len(NUMPY[op][1])
        fn = ir.Function(module, ir.FunctionType(F32, [F32] * arity), "t_" + op.replace(".", "_"))
        b = ir.IRBuilder(fn.append_basic_block())
        b.ret(lane_values.libdevice_float(b, name, list(fn.args), None))
    engine = _host_jit(module)
    out = {}
    for op in ops:
        arity = len(NUMPY[op][1])
        address = engine.get_function_address("t_" + op.replace(".", "_"))
        out[op] = ctypes.CFUNCTYPE(ctypes.c_float, *[ctypes.c_float] * arity)(address)
    out["_engine"] = engine     # keeps the code alive
    return out


@pytest.mark.parametrize("op", sorted(NUMPY))
def test_libdevice_op_matches_numpy(op, host_functions):
    fn, domain = NUMPY[op]
    fn = fn or _erfc
    rng = np.random.default_rng(abs(hash(op)) % 2 ** 32)
    args = [rng.uniform(lo, hi, 400).astype(np.float32) for lo, hi in domain]
    got = np.array([host_functions[op](*(float(a[i]) for a in args)) for i in range(400)], np.float32)
    ref = fn(*(a.astype(np.float64) for a in args))
    ulps = np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    bound = 0 if op == "arith.remf" else 8
    worst = int(np.argmax(ulps))
    assert ulps[worst] <= bound + 0.5, (op, [float(a[worst]) for a in args], float(got[worst]), float(ref[worst]))


def _kernel(tmp_path, name: str, src: str):
    """The ``@jit`` kernel ``k`` of ``src``, written to a file of its own (so errors have a
    file and a line: ``src``'s line n is the file's n + 3)."""
    path = tmp_path / f"{name}.py"
    path.write_text("import numpy as np\nimport xetile_dsl.language as xt\n\n" + src)
    ns: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    return xd.jit(ns["k"]), str(path)


_EXPRS = {"atan": "xt.atan(t)", "acosh": "xt.acosh(xt.abs(t) + 1.0)", "expm1": "xt.expm1(t)",
          "erfc": "xt.erfc(t)", "pow": "xt.pow(xt.abs(t) + 0.5, u)", "fmod": "xt.fmod(t, u)",
          "trunc": "xt.trunc(t)", "round": "xt.round(t)", "copysign": "xt.copysign(t, u)",
          "hypot": "xt.extern('hypot', t, u, result=xt.float32, numpy_impl=np.hypot)",
          "cospi": "xt.extern('cospi', t, result=xt.float32, numpy_impl=np.cos)"}


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
def test_kernels_calling_libdevice_assemble(dt, tmp_path):
    body = "\n".join(f"    v = v + {e.replace('xt.float32', 'DT')}" for e in _EXPRS.values())
    src = (f"def k(x, y, z, DT: xt.constexpr):\n"
           f"    t = xt.load_tile(xt.init_tile(x, [0, 0], [4, 64]))\n"
           f"    u = xt.load_tile(xt.init_tile(y, [0, 0], [4, 64]))\n"
           f"    v = t\n{body}\n"
           f"    xt.store_tile(v, xt.init_tile(z, [0, 0], [4, 64]))\n")
    kernel, path = _kernel(tmp_path, "libdevice_kernel", src)
    k = xd.compile(kernel, {"x": f"{dt}[:,:]", "y": f"{dt}[:,:]", "z": f"{dt}[:,:]"},
                   {"DT": {"f32": xt.float32, "f16": xt.float16, "bf16": xt.bfloat16}[dt]}, target="sm90")
    assert "__nv_" not in k.ptx and "call" not in re.sub(r"//.*", "", k.ptx)
    assert "error" not in ptxas_report(k.ptx, "sm_90", tmp_path).lower()


def test_integer_externs_map_to_libdevice_and_funnel_shifts(tmp_path):
    src = ("def k(x, z):\n"
           "    t = xt.load_tile(xt.init_tile(x, [0, 0], [4, 64]))\n"
           "    v = xt.extern('popcount', t, result=xt.int32, numpy_impl=np.abs)\n"
           "    v = v + xt.extern('clz', t, result=xt.int32, numpy_impl=np.abs)\n"
           "    v = v + xt.extern('mul_hi', t, 1234567, result=xt.int32, numpy_impl=np.abs)\n"
           "    v = v + xt.extern('rotate', t, 7, result=xt.int32, numpy_impl=np.abs)\n"
           "    xt.store_tile(v, xt.init_tile(z, [0, 0], [4, 64]))\n")
    kernel, path = _kernel(tmp_path, "int_kernel", src)
    k = xd.compile(kernel, {"x": "i32[:,:]", "z": "i32[:,:]"}, {}, target="sm90")
    for insn in ("popc.b32", "clz.b32", "mul.hi.s32", "shf.l.wrap.b32"):
        assert insn in k.ptx, insn
    assert "error" not in ptxas_report(k.ptx, "sm_90", tmp_path).lower()


def test_an_unknown_extern_is_refused_at_its_line(tmp_path):
    src = ("def k(x, z):\n"
           "    t = xt.load_tile(xt.init_tile(x, [0, 0], [4, 64]))\n"
           "    xt.store_tile(xt.extern('no_such_fn', t, result=xt.float32, numpy_impl=np.abs),\n"
           "                  xt.init_tile(z, [0, 0], [4, 64]))\n")
    kernel, path = _kernel(tmp_path, "bad_kernel", src)
    with pytest.raises(CompilationError, match="no_such_fn") as info:
        xd.compile(kernel, {"x": "f32[:,:]", "z": "f32[:,:]"}, {}, target="sm90")
    assert info.value.filename == path and info.value.line == 6


def test_float_builtins_of_integer_values_run_on_the_host(_libdevice):
    """libdevice functions taking or returning integers, called as a kernel calls them:
    ilogb and ldexp of f32, exact against numpy's frexp and ldexp.  (f16 arguments, whose
    conversions the host would need a runtime library for, are checked by ptxas below.)"""
    I32 = ir.IntType(32)
    module = ir.Module("libdevice_int_host")
    module.triple = TRIPLE
    for name, params, ret, body in (
            ("ilogb32", [F32], I32, lambda b, a: lane_values.libdevice_float(b, "ilogb", [a[0]], None)),
            ("ldexp32", [F32, I32], F32, lambda b, a: lane_values.libdevice_float(b, "ldexp", list(a), None))):
        fn = ir.Function(module, ir.FunctionType(ret, params), name)
        b = ir.IRBuilder(fn.append_basic_block())
        b.ret(body(b, fn.args))
    engine = _host_jit(module)
    ilogb32 = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_float)(engine.get_function_address("ilogb32"))
    ldexp32 = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.c_int32)(engine.get_function_address("ldexp32"))
    rng = np.random.default_rng(7)
    x = (rng.uniform(-1, 1, 300) * 2.0 ** rng.integers(-20, 20, 300)).astype(np.float32)
    e = rng.integers(-30, 30, 300).astype(np.int32)
    assert [ilogb32(float(v)) for v in x] == list(np.frexp(x)[1] - 1)
    assert np.array_equal(np.array([ldexp32(float(v), int(k)) for v, k in zip(x, e)], np.float32), np.ldexp(x, e))


@pytest.mark.parametrize("dt", ["f16", "f32", "f64"])
def test_integer_taking_and_returning_externs_assemble(dt, tmp_path):
    src = ("def k(x, n, z, w):\n"
           "    t = xt.load_tile(xt.init_tile(x, [0, 0], [4, 64]))\n"
           "    e = xt.load_tile(xt.init_tile(n, [0, 0], [4, 64]))\n"
           "    xt.store_tile(xt.extern('ilogb', t, result=xt.int32, numpy_impl=np.abs),\n"
           "                  xt.init_tile(z, [0, 0], [4, 64]))\n"
           "    xt.store_tile(xt.extern('ldexp', t, e, result=xt.float32, numpy_impl=np.ldexp),\n"
           "                  xt.init_tile(w, [0, 0], [4, 64]))\n")
    kernel, path = _kernel(tmp_path, "int_result_kernel", src)
    k = xd.compile(kernel, {"x": f"{dt}[:,:]", "n": "i32[:,:]", "z": "i32[:,:]", "w": "f32[:,:]"}, {},
                   target="sm90")
    assert "__nv_" not in k.ptx
    assert "error" not in ptxas_report(k.ptx, "sm_90", tmp_path).lower()


def test_a_call_of_other_arguments_than_libdevices_is_refused(_libdevice):
    """The emitter calls a libdevice function only in its own type: a pointer parameter (an
    out-argument) or an argument of another kind is a LoweringError, not a bad module."""
    module = ir.Module("m")
    fn = ir.Function(module, ir.FunctionType(F32, [F32, ir.IntType(32)]), "f")
    b = ir.IRBuilder(fn.append_basic_block())
    with pytest.raises(LoweringError, match=r"__nv_frexpf takes \(float, ptr\) and returns float"):
        libdevice.call(b, "frexpf", [fn.args[0]])
    with pytest.raises(LoweringError, match=r"__nv_sinf takes \(float\) and returns float, not \(i32\)"):
        libdevice.call(b, "sinf", [fn.args[1]])
    assert libdevice.call(b, "ldexpf", [fn.args[0], fn.args[1]]).type == F32
