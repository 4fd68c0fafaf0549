"""xetile_dsl: write Intel GPU tile kernels (XeTile / XeGPU) in Python.

    import xetile_dsl as xd
    import xetile_dsl.language as xt

    @xd.jit
    def kernel(a, b, c, K, BM: xt.constexpr, ...): ...
    kernel[(grid_m, grid_n)](a, b, c, K, BM=32, ...)
"""
from . import language
from .autotuner import Autotuner, Config, autotune
from .compiler import CompiledKernel, compile, compile_mlir
from .errors import CacheKeyError, CompilationError, LaunchError, XeTileError
from .jit import JITFunction, jit
from .language import constexpr
from .runtime.launcher import synchronize

__all__ = ["Autotuner", "CacheKeyError", "CompilationError", "Config", "autotune", "CompiledKernel", "JITFunction", "compile_mlir", "LaunchError", "XeTileError", "compile",
           "constexpr", "jit", "language", "synchronize"]
__version__ = "0.1.0"
