"""Hints for names a kernel reaches for that the language does not have: Triton's names
(``tl.dot``, ``xt.load``, ...) map to ours, anything else gets the closest of ours.

Many Triton names are ours too (``program_id``, ``num_programs``, ``arange``, ``zeros``,
``full``, ``sum``, ``max``, ``where``, ``cdiv`` ...); the table holds the ones that differ.
"""
from __future__ import annotations

from types import ModuleType

import numpy as np

from .. import language
from .._lazy import LazyModule

#: loaded at the first suggestion: the cache key of every launch imports this module
difflib = LazyModule("difflib", globals())

#: Triton name -> what to write with xetile_dsl.language (as ``xt``)
TRITON_EQUIVALENTS = {
    "dot": "xt.tile_mma(a, b, acc) (a tile matrix multiply-accumulate)",
    "load": "xt.load_tile(tile, mask=..., other=...) on a tile from xt.init_tile(array, offsets, shape), or "
            "xt.load_gather(tile, mask)",
    "store": "xt.store_tile(value, tile, mask=...) on a tile from xt.init_tile(array, offsets, shape), or "
             "xt.store_scatter(value, tile, mask)",
    "make_block_ptr": "xt.init_tile(array, offsets, shape)",
    "make_tensor_descriptor": "xt.init_tile(array, offsets, shape)",
    "advance": "xt.update_tile_offset(tile, row_delta, col_delta)",
    "atomic_add": 'xt.atomic_rmw("add", value, tile)',
    "atomic_max": 'xt.atomic_rmw("max", value, tile)',
    "atomic_min": 'xt.atomic_rmw("min", value, tile)',
    "debug_barrier": "xt.barrier()",
    "trans": "xt.transpose(x)",
    "permute": "xt.transpose(x)",
    "reduce": "xt.tile_reduce(x, kind, axis) or xt.sum / xt.max / xt.min / xt.prod",
    "cast": "x.to(dtype) or xt.astype(x, dtype)",
    "zeros_like": "xt.zeros(shape, dtype)",
    "full_like": "xt.full(shape, value, dtype)",
    "broadcast": "xt.broadcast_to(x, shape)",
    "device_print": "print(...) (runs in the interpreter, XETILE_INTERPRET=1)",
    "range": "range(...) or xt.static_range(...)",
    "extern_elementwise": 'xt.extern("name", *args, result=dtype, numpy_impl=None)',
}


#: Triton names with no equivalent here yet: said plainly, never answered with a name that
#: only looks alike (``sort`` is not ``sqrt``); name -> what to do meanwhile ("" for none)
TRITON_NOT_YET = {
    **dict.fromkeys(("cumsum", "cumprod", "associative_scan", "sort", "flip", "histogram", "gather",
                     "view", "ravel", "join", "split", "interleave", "clamp", "fdiv",
                     "div_rn", "sqrt_rn", "softmax", "xor_sum", "inline_asm_elementwise", "swizzle2d",
                     "multiple_of", "max_contiguous", "assume", "static_assert", "static_print", "device_assert"),
                    ""),
}


def _ours() -> list[str]:
    return [name for name in language.__all__ if not name.startswith("_")]


def hint(name: str) -> str:
    """What to write instead of ``name`` (Triton's equivalent, else the closest of ours),
    as a clause to append to an error message; empty when there is nothing close."""
    if name in TRITON_EQUIVALENTS:
        return f"; did you mean {TRITON_EQUIVALENTS[name]}?"
    if name in TRITON_NOT_YET:
        meanwhile = TRITON_NOT_YET[name]
        return (f"; xt.{name} is not available yet (Triton's tl.{name} has no xetile_dsl equivalent)"
                + (f": {meanwhile}" if meanwhile else ""))
    # a typo is close in spelling (load_tiles, tile_mm); 0.6 took rand for arange and load_tiles for store_tile
    close = difflib.get_close_matches(name, _ours(), n=3, cutoff=0.7)
    return f"; did you mean {' or '.join(f'xt.{c}' for c in close)}?" if close else ""


#: xt's element-wise math (what a math./numpy. function in a kernel is pointed at)
XT_MATH = ("abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign", "cos",
           "cosh", "erf", "erfc", "exp", "exp2", "expm1", "floor", "fma", "fmod", "isfinite", "isinf", "isnan", "log",
           "log1p", "log2", "log10", "maximum", "minimum", "pow", "round", "rsqrt", "sigmoid", "signbit", "sin",
           "sinh", "sqrt", "tan", "tanh", "trunc", "where")
#: numpy / math spellings of xt's functions
_MATH_ALIASES = {"fabs": "abs", "absolute": "abs", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
                 "arctan2": "atan2", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "power": "pow",
                 "rint": "round", "fmax": "maximum", "fmin": "minimum", "max": "maximum",
                 "min": "minimum", "amax": "maximum", "amin": "minimum"}


def is_host_math(value) -> bool:
    """True for the functions of ``math``, ``cmath`` and ``numpy`` (ufuncs included), which
    run on the host, not in a kernel."""
    if isinstance(value, np.ufunc):
        return True
    module = getattr(value, "__module__", None)
    if not callable(value) or not isinstance(module, str) or isinstance(value, type):
        return False
    return module in ("math", "cmath") or module == "numpy" or module.startswith("numpy.")


def host_math_call(text: str, value) -> str:
    """The error for a kernel reading ``math.asin``/``np.exp`` (``text``): the xt function
    to use, or which xt math functions there are."""
    name = getattr(value, "__name__", text.rsplit(".", 1)[-1])
    ours = _MATH_ALIASES.get(name, name)
    if ours in XT_MATH or (ours in _ours() and ours not in ("dtype",)):
        return f"{text} is not a kernel function; use xt.{ours}"
    return (f"{text} is not a kernel function, and xt has no {name}; xt's math functions are "
            f"{', '.join('xt.' + n for n in XT_MATH)}")


def is_triton(value) -> bool:
    """True for Triton's modules and the functions in them (``tl``, ``tl.dot``, ...)."""
    module = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
    return isinstance(module, str) and (module == "triton" or module.startswith("triton."))


def triton_call(callee) -> str:
    """The error for calling Triton's ``callee`` in a kernel, with our equivalent."""
    name = getattr(callee, "__name__", str(callee))
    ours = TRITON_EQUIVALENTS.get(name) or (f"xt.{name}" if name in _ours() else None)
    instead = f"; write {ours}" if ours else hint(name) or "; see xetile_dsl.language for the operations"
    return (f"tl.{name} is Triton's, and Triton's operations cannot run in an xetile_dsl kernel "
            f"(use `import xetile_dsl.language as xt`){instead}")


#: Triton's usual module names, undefined in an xetile_dsl kernel
UNDEFINED_TRITON = ("tl", "triton")
UNDEFINED_TRITON_HINT = ("; xetile_dsl kernels use `import xetile_dsl.language as xt` (xt.program_id, xt.init_tile, "
                         "xt.load_tile, xt.tile_mma, ...), not Triton's modules")
