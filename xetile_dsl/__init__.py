"""xetile_dsl: write Intel GPU tile kernels (XeTile / XeGPU) in Python.

    import xetile_dsl as xd
    import xetile_dsl.language as xt

    @xd.jit
    def kernel(a, b, c, K, BM: xt.constexpr, ...): ...
    kernel[(grid_m, grid_n)](a, b, c, K, BM=32, ...)
"""
from .runtime.opencl_icd import setup_intel_cpu_icd

# Before anything can load OpenCL: make Intel's pip-installed CPU runtime visible to the
# OpenCL loader, so that dpnp/dpctl imported after us find the same device our kernels
# launch on when there is no Intel GPU (cheap: a few environment variables and one file).
setup_intel_cpu_icd()

from . import language  # noqa: E402 - after the OpenCL set-up above
from ._lazy import package_getattr  # noqa: E402
from .errors import CacheKeyError, CompilationError, LaunchError, XeTileError  # noqa: E402
from .jit import JITFunction, jit  # noqa: E402 - binds ``jit`` over the submodule of that name
from .language import constexpr  # noqa: E402

# The rest loads on first use (PEP 562), so that ``import xetile_dsl`` is cheap: the
# compiler (xDSL, llvmlite) at the first kernel that is not in the disk cache, the
# runtime at the first launch, the autotuner and the interpreter when used.
__getattr__ = package_getattr(__name__, {
    "Autotuner": ".autotuner", "Config": ".autotuner", "autotune": ".autotuner",
    "CompiledKernel": ".compiler", "compile": ".compiler", "compile_mlir": ".compiler",
    "stage_names": ".compiler", "synchronize": ".runtime.inflight",
    "ArrayTable": ".runtime.array_tables", "array_table": ".runtime.array_tables",
    "DeviceProperties": ".runtime.device_properties", "device_properties": ".runtime.device_properties"})

__all__ = ["ArrayTable", "array_table", "Autotuner", "CacheKeyError", "CompilationError", "Config", "autotune", "CompiledKernel", "JITFunction", "compile_mlir", "LaunchError", "XeTileError", "compile", "stage_names",
           "constexpr", "jit", "language", "synchronize", "DeviceProperties", "device_properties"]
__version__ = "0.1.0"
