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
from .autotuner import Autotuner, Config, autotune
from .compiler import CompiledKernel, compile, compile_mlir
from .errors import CacheKeyError, CompilationError, LaunchError, XeTileError
from .jit import JITFunction, jit
from .language import constexpr
from .runtime.launcher import synchronize

__all__ = ["Autotuner", "CacheKeyError", "CompilationError", "Config", "autotune", "CompiledKernel", "JITFunction", "compile_mlir", "LaunchError", "XeTileError", "compile",
           "constexpr", "jit", "language", "synchronize"]
__version__ = "0.1.0"
