"""Errors that were ours, not the user's: each case once surfaced as a bare Python exception
(KeyError, StopIteration, a pass's ValueError, dpctl's SyclKernelSubmitError) or as an
"internal compiler error".  Now each either works or is an XeTileError that is located at
the user's line (kernel mistakes) and says what would be legal."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import errors
from xetile_dsl.errors import CompilationError, LaunchError, UsageError, XeTileError
from xetile_dsl.kernels.matmul import matmul_kernel

THIS_FILE = Path(__file__).resolve()


def _line(marker: str) -> int:
    """The line of this file that carries ``marker`` (a comment at the end of a line)."""
    lines = THIS_FILE.read_text().splitlines()
    return next(i + 1 for i, text in enumerate(lines) if text.rstrip().endswith(f"# {marker}"))


def _assert_located(exc: CompilationError, marker: str, *fragments: str) -> None:
    text = str(exc)
    assert f"{THIS_FILE.name}:{_line(marker)}:" in text, text
    assert "^" in text, text
    for fragment in fragments:
        assert fragment in text, text


@xd.jit
def add_self(x, y, BM: xt.constexpr):
    t = xt.load_tile(xt.init_tile(x, [xt.program_id(0) * BM, 0], [BM, 16]))
    xt.store_tile(t + t, xt.init_tile(y, [xt.program_id(0) * BM, 0], [BM, 16]))


@xd.jit
def unsigned_ops(x, y, q, f, BM: xt.constexpr):
    t = xt.load_tile(xt.init_tile(x, [0, 0], [BM, 16]))
    u = xt.load_tile(xt.init_tile(y, [0, 0], [BM, 16]))
    xt.store_tile(xt.maximum(t, u) // u, xt.init_tile(q, [0, 0], [BM, 16]))
    xt.store_tile(xt.astype(t, xt.float32), xt.init_tile(f, [0, 0], [BM, 16]))


# --- uint32 arrays: supported end to end (were KeyError: 'u32') -------------------------------

@pytest.mark.parametrize("target", ["interpret", "cpu-pvc"])
def test_uint32_arrays_use_unsigned_arithmetic(target):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2**32, (16, 16), dtype=np.uint64).astype(np.uint32)   # half are >= 2**31
    y = rng.integers(1, 2**32, (16, 16), dtype=np.uint64).astype(np.uint32)
    q, f = np.zeros_like(x), np.zeros((16, 16), np.float32)
    unsigned_ops.on(target)[(1,)](x, y, q, f, BM=16)
    np.testing.assert_array_equal(q, np.maximum(x, y) // y)     # signed compares/division would differ
    np.testing.assert_array_equal(f, x.astype(np.float32))


def test_unsupported_array_dtype_lists_the_supported_ones():
    with pytest.raises(LaunchError, match=r"argument 'x': arrays of dtype complex64 are not supported; use one "
                                          r"of float16, bfloat16, .*uint32.*\(bfloat16 from ml_dtypes\)"):
        add_self.on("cpu-pvc")[(1,)](np.zeros((16, 16), np.complex64), np.zeros((16, 16), np.complex64), BM=16)


# --- signature= spellings, unknown targets --------------------------------------------------

def test_signature_accepts_numpy_dtype_names():
    ours = xd.compile(add_self, {"x": "f32[:,:]", "y": "*f32"}, {"BM": 16}, target="interpret")
    numpys = xd.compile(add_self, {"x": "float32[:,:]", "y": "*float32"}, {"BM": 16}, target="interpret")
    assert numpys.asm["xetile"] == ours.asm["xetile"]


def test_signature_with_an_unknown_type_lists_the_legal_spellings():
    with pytest.raises(UsageError, match=r"signature of 'x': unknown element type 'half'; legal spellings are "
                                         r"'f16\[:,:\]' or '\*f16' .*f16 \(float16\), .*u32 \(uint32\)"):
        xd.compile(add_self, {"x": "half[:,:]", "y": "f16[:,:]"}, {"BM": 16}, target="interpret")


def test_unknown_target_is_ours_and_lists_the_known_ones():
    known = "pvc, bmg, lnl, ptl, arc, cpu, cpu-pvc, cpu-arc, interpret"
    with pytest.raises(UsageError, match=f"unknown target 'xe9'; use one of {known}"):
        xd.compile(add_self, {"x": "f32[:,:]", "y": "f32[:,:]"}, {"BM": 16}, target="xe9")
    with pytest.raises(XeTileError, match=f"unknown target 'xe9'; use one of {known}"):
        add_self.on("xe9")[(1,)](np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32), BM=16)
    from xetile_dsl.targets import get_target

    with pytest.raises(XeTileError, match="known targets: arc, bmg, lnl, ptl, pvc"):
        get_target("xe9")


# --- kernels that compile now --------------------------------------------------------------

@xd.jit
def moved_never_loaded(x, y, K, BM: xt.constexpr):
    dead = xt.init_tile(x, [0, 0], [BM, 16])
    dead = xt.update_tile_offset(dead, BM, 0)              # moved, never read or written
    walker = xt.init_tile(x, [0, 0], [BM, 16])
    acc = xt.zeros([BM, 16], xt.float32)
    for k in range(0, K, BM):
        acc += xt.load_tile(walker)
        walker = xt.update_tile_offset(walker, BM, 0)
        dead = xt.update_tile_offset(dead, BM, 0)          # a dead loop-carried tile too
    xt.store_tile(acc, xt.init_tile(y, [0, 0], [BM, 16]))


def test_a_tile_moved_but_never_loaded_is_dead_code():
    x = np.arange(48 * 16, dtype=np.float32).reshape(48, 16)
    y = np.zeros((16, 16), np.float32)
    moved_never_loaded.on("cpu-pvc")[(1,)](x, y, 48, BM=16)
    np.testing.assert_array_equal(y, x[:16] + x[16:32] + x[32:])


@xd.jit
def every_parameter_kind(x, /, y, *, z, BM: xt.constexpr):
    t = xt.load_tile(xt.init_tile(x, [0, 0], [BM, 16]))
    u = xt.load_tile(xt.init_tile(y, [0, 0], [BM, 16]))
    xt.store_tile(t - u, xt.init_tile(z, [0, 0], [BM, 16]))


def test_positional_only_and_keyword_only_parameters():
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    y, z = np.ones_like(x), np.zeros_like(x)
    every_parameter_kind.on("cpu-pvc")[(1,)](x, y, z=z, BM=16)
    np.testing.assert_array_equal(z, x - 1)


# --- located kernel errors ----------------------------------------------------------------

@xd.jit
def fill_int8(y, V: xt.constexpr, BM: xt.constexpr):
    xt.store_tile(xt.full([BM, 64], V, xt.int8), xt.init_tile(y, [0, 0], [BM, 64]))  # fill-int8


@xd.jit
def fill_uint8(y, V: xt.constexpr, BM: xt.constexpr):
    xt.store_tile(xt.full([BM, 64], V, xt.uint8), xt.init_tile(y, [0, 0], [BM, 64]))  # fill-uint8


def test_full_with_a_value_the_integer_type_cannot_hold():
    y8 = np.zeros((16, 64), np.int8)
    with pytest.raises(CompilationError) as info:
        fill_int8.on("interpret")[(1,)](y8, V=300, BM=16)
    _assert_located(info.value, "fill-int8", "the fill value 300 does not fit i8: the legal range is -128..127")
    with pytest.raises(CompilationError) as info:
        fill_uint8.on("interpret")[(1,)](y8.view(np.uint8), V=-1, BM=16)
    _assert_located(info.value, "fill-uint8", "the fill value -1 does not fit u8: the legal range is 0..255")
    fill_uint8.on("interpret")[(1,)](y8.view(np.uint8), V=255, BM=16)        # the ends of the range are fine
    assert (y8.view(np.uint8) == 255).all()


def test_a_lambda_kernel_is_refused_at_its_line():
    with pytest.raises(CompilationError) as info:
        xd.jit(lambda x, y: None)  # lambda-kernel
    _assert_located(info.value, "lambda-kernel", "a kernel must be a function defined with `def`")


def test_star_parameters_are_refused_at_the_def_line():
    with pytest.raises(CompilationError) as info:
        @xd.jit
        def star_args(x, *rest):  # star-args
            pass
    _assert_located(info.value, "star-args", "kernel parameter '*rest' is not supported",
                    "keyword-only and positional-only parameters are fine")
    with pytest.raises(CompilationError) as info:
        @xd.jit
        def star_kwargs(x, **options):  # star-kwargs
            pass
    _assert_located(info.value, "star-kwargs", "kernel parameter '**options' is not supported")


# --- launch errors before the device is touched ----------------------------------------------

@pytest.fixture
def no_device_submit(monkeypatch):
    from xetile_dsl.runtime.launchers import BACKENDS

    def no_launch(*args, **kwargs):
        raise AssertionError("the device was reached")
    for backend in BACKENDS.values():
        monkeypatch.setattr(backend, "submit_async", no_launch)
        monkeypatch.setattr(backend, "submit", no_launch)


def test_empty_arrays_are_a_clear_launch_error(no_device_submit):
    for shape in [(0, 16), (16, 0), (0, 0)]:
        with pytest.raises(LaunchError, match=r"argument 0 \('x'\): the array is empty \(shape \(\d+, \d+\)\); "
                                              r"every extent must be at least 1"):
            add_self.on("cpu-pvc")[(1,)](np.zeros(shape, np.float32), np.zeros((16, 16), np.float32), BM=16)


@pytest.mark.parametrize("grid", [(2**27,), (1, 2**31), (2**12, 2**15), (1, 1, 2**40)])
def test_a_grid_beyond_the_runtime_range_is_a_launch_error(grid, no_device_submit):
    """The CPU-PVC kernel has 16 work items per workgroup: grid[0] <= (2**31 - 1) // 16."""
    x = np.zeros((16, 16), np.float32)
    with pytest.raises(LaunchError, match=r"is too large: grid\[0\] may be 1\.\.134217727 \(x 16 work items per "
                                          r"workgroup\), grid\[1\] and grid\[2\] 1\.\.2147483647, and the product"):
        add_self.on("cpu-pvc")[grid](x, x.copy(), BM=16)


# --- one taxonomy ---------------------------------------------------------------------------

def _exception_classes() -> list[type]:
    """Every public exception class defined in the xetile_dsl package (private ones, like
    the interpreter's ``_Aborted`` thread signal, are caught where they are raised)."""
    found = []
    for info in pkgutil.walk_packages(xd.__path__, "xetile_dsl."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == info.name and issubclass(cls, BaseException) and not issubclass(cls, Warning) \
                    and not cls.__name__.startswith("_"):
                found.append(cls)
    return found


def test_every_error_class_of_the_package_is_an_xetile_error():
    classes = _exception_classes()
    names = {c.__name__ for c in classes}
    assert {"DeviceError", "BuildError", "SpirvEmitError", "ToolError", "OclocError", "ElfError"} <= names
    assert [c.__qualname__ for c in classes if not issubclass(c, XeTileError)] == []
    from xetile_dsl.tools import _common

    assert _common.ToolError is errors.ToolError                      # one ToolError


def test_runtime_tool_and_codegen_failures_are_xetile_errors():
    from xetile_dsl.codegen.spirv.translate import emit_spirv
    from xetile_dsl.runtime.abi import KernelABI
    from xetile_dsl.runtime.devices import get_device
    from xetile_dsl.runtime.launchers import get_launcher
    from xetile_dsl.tools._common import run

    failures = [(lambda: get_device("warp:drive"), errors.DeviceError),
                (lambda: get_launcher().build(b"not SPIR-V", KernelABI("k")), errors.BuildError),
                (lambda: emit_spirv("this is not LLVM IR"), errors.SpirvEmitError),
                (lambda: run(["/nonexistent/ocloc"]), errors.ToolError)]
    for fail, cls in failures:
        with pytest.raises(XeTileError) as info:
            fail()
        assert isinstance(info.value, cls) and isinstance(info.value, RuntimeError)   # RuntimeError: compat


def test_kernel_language_misuse_outside_a_kernel_is_an_xetile_error():
    with pytest.raises(XeTileError, match="can only be called inside a @xetile_dsl.jit kernel"):
        xt.barrier()
    with pytest.raises(UsageError, match=r"wg_map sg_layout must be two positive integers, got \[0, 4\]"):
        xt.wg_map(sg_layout=[0, 4], sg_data=[8, 8])


@xd.jit
def crash_in_a_pass(x, y, BM: xt.constexpr):
    t = xt.load_tile(xt.init_tile(x, [0, 0], [BM, 16]))  # the-load
    xt.store_tile(t, xt.init_tile(y, [0, 0], [BM, 16]))


def test_an_unexpected_exception_in_a_pass_is_a_located_internal_error(monkeypatch):
    from xetile_dsl.lowering.passes import xetile_to_xegpu

    def broken(self, op):
        raise ZeroDivisionError("a stand-in for a bug in the pass")
    monkeypatch.setattr(xetile_to_xegpu._Translator, "_op_LoadTileOp", broken)
    with pytest.raises(CompilationError) as info:
        xd.compile(crash_in_a_pass, {"x": "f32[:,:]", "y": "f32[:,:]"}, {"BM": 16}, target="cpu-pvc")
    _assert_located(info.value, "the-load", "internal compiler error in pass 'convert-xetile-to-xegpu'",
                    "ZeroDivisionError: a stand-in for a bug in the pass", "a bug in xetile_dsl, not in the kernel")


# --- the autotuner ------------------------------------------------------------------------

def _rows(seed: int):
    x = np.random.default_rng(seed).standard_normal((64, 16)).astype(np.float32)
    return x, np.zeros_like(x)


def _row_grid(meta):
    return (64 // meta["BM"],)


CONFIGS = [xd.Config({"BM": 16}), xd.Config({"BM": 32})]
KEY = (((64, 16), "float32"),)   # the tuning key: x by shape and dtype


def test_autotune_skips_a_config_that_fails_to_build(tmp_path, monkeypatch):
    """The runtime rejecting one config's program (a BuildError) drops that config only."""
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))
    from xetile_dsl.jit import JITFunction

    real = JITFunction.get_kernel

    def rejecting(self, specs, constants, target, device, launcher=None, *options):
        if constants.get("BM") == 16:
            raise errors.BuildError("the device runtime rejected the program (a stand-in)")
        return real(self, specs, constants, target, device, launcher, *options)
    monkeypatch.setattr(JITFunction, "get_kernel", rejecting)
    fresh = xd.jit(add_self.fn)                      # nothing loaded yet: every config goes to get_kernel
    tuned = xd.autotune(configs=CONFIGS, key=["x"], warmup=0, rep=1, progress=False)(fresh)
    x, y = _rows(2)
    tuned.on("cpu-pvc")[_row_grid](x, y)
    assert tuned.best[KEY] is CONFIGS[1]
    assert tuned.timings[KEY][0][2].startswith("failed: the device runtime rejected the program")
    np.testing.assert_array_equal(y, x + x)


def test_autotune_reference_is_the_interpreter_not_the_first_config(tmp_path, monkeypatch):
    """The first config gives a wrong result (as a miscompiled config would): it is dropped
    and the correct second config chosen.  With the first config as the reference the
    correct one would be the one dropped."""
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))
    real = add_self.run

    def miscompiled_when_bm_is_16(grid, target, args, kwargs):
        event = real(grid, target, args, kwargs)
        if kwargs.get("BM") == 16:
            args[1][5, 7] += 1.0                      # one wrong element of y
        return event
    monkeypatch.setattr(add_self, "run", miscompiled_when_bm_is_16)
    tuned = xd.autotune(configs=CONFIGS, key=["x"], warmup=0, rep=1, progress=False)(add_self)
    x, y = _rows(3)
    with pytest.warns(RuntimeWarning, match=r"Config\(BM=16\) disagrees with the "
                                            r"reference \(the interpreter\) on y; not used"):
        tuned.on("cpu-pvc")[_row_grid](x, y)
    assert tuned.best[KEY] is CONFIGS[1]
    assert [note for _, _, note in tuned.timings[KEY]] == ["wrong result in y", "ok"]
    np.testing.assert_array_equal(y, x + x)


def test_autotune_tolerance_is_derived_from_the_dtypes():
    """2 u_out + 2 n u_acc (autotuner.tolerance): f16 results accumulate in f32; ints are exact."""
    from xetile_dsl.autotuner import _close, tolerance

    assert tolerance(np.float32, 64) == 2 * 2.0**-24 + 128 * 2.0**-24
    assert tolerance(np.float16, 64) == 2 * 2.0**-11 + 128 * 2.0**-24
    assert tolerance(np.float64, 8) == 2 * 2.0**-53 + 16 * 2.0**-53
    assert tolerance(np.int32, 64) == 0.0
    ref = np.full((4, 64), 100.0, np.float32)
    within = ref + np.float32(100.0 * tolerance(np.float32, 64) * 0.9)
    beyond = ref + np.float32(100.0 * tolerance(np.float32, 64) * 1.5)
    assert _close(within, ref, None, 64) and not _close(beyond, ref, None, 64)


# --- no silent skips in CI ----------------------------------------------------------------

def test_a_missing_runtime_fails_instead_of_skipping_when_required(monkeypatch):
    """XETILE_REQUIRE_RUNTIMES=1 (set by .ci/run) turns "dpnp/dpctl/pyopencl/CPU runtime
    missing" skips into failures, as XETILE_REQUIRE_OCLOC=1 does for ocloc."""
    from conftest_tools import missing, require_dpnp, require_module

    monkeypatch.setenv("XETILE_REQUIRE_RUNTIMES", "1")
    with pytest.raises(pytest.fail.Exception, match="XETILE_REQUIRE_RUNTIMES=1 but no_such_runtime is not importable"):
        require_module("no_such_runtime")
    with pytest.raises(pytest.fail.Exception, match="XETILE_REQUIRE_RUNTIMES=1 but no OpenCL CPU device"):
        missing("no OpenCL CPU device")
    monkeypatch.setenv("XETILE_REQUIRE_RUNTIMES", "0")
    with pytest.raises(pytest.skip.Exception):
        require_module("no_such_runtime")
    assert require_dpnp() is importlib.import_module("dpnp")
    ci = (THIS_FILE.parents[2] / ".ci" / "run").read_text()
    assert "export XETILE_REQUIRE_RUNTIMES=1" in ci


def test_a_missing_torch_fails_when_required_but_a_missing_xpu_always_skips(monkeypatch):
    """XETILE_REQUIRE_TORCH=1 (.ci/run, which installs torch) turns "torch missing" or "torch
    older than 2.4" skips into failures; "no XPU device" stays a skip (hardware, not an
    installable dependency).  Stand-ins replace torch, so this runs with or without it."""
    from conftest_tools import require_torch, require_torch_xpu

    old_torch = types.SimpleNamespace(__version__="2.3.1", library=types.SimpleNamespace())
    cpu_torch = types.SimpleNamespace(__version__="2.9.0+cpu", library=types.SimpleNamespace(custom_op=None),
                                      xpu=types.SimpleNamespace(is_available=lambda: False))
    monkeypatch.setenv("XETILE_REQUIRE_TORCH", "1")
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(pytest.fail.Exception, match="XETILE_REQUIRE_TORCH=1 but PyTorch is not installed"):
        require_torch()
    monkeypatch.setitem(sys.modules, "torch", old_torch)
    with pytest.raises(pytest.fail.Exception, match=r"XETILE_REQUIRE_TORCH=1 but torch 2\.3\.1 has no .*custom_op"):
        require_torch()
    monkeypatch.setitem(sys.modules, "torch", cpu_torch)
    assert require_torch() is cpu_torch
    with pytest.raises(pytest.skip.Exception, match=r"torch 2\.9\.0\+cpu sees no XPU device"):
        require_torch_xpu()
    monkeypatch.setenv("XETILE_REQUIRE_TORCH", "0")
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(pytest.skip.Exception, match="PyTorch is not installed"):
        require_torch()
    ci = (THIS_FILE.parents[2] / ".ci" / "run").read_text()
    assert "export XETILE_REQUIRE_TORCH=1" in ci and 'pip install -q "torch>=2.4"' in ci
