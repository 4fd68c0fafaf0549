"""Element-wise math, casts, selection, reductions, shape ops and value creation.

Operands may be tile values, runtime scalars or compile-time numbers. One rule set (in
``xetile_dsl.frontend.semantic``) decides the result element type and shape for every
op here and for the Python operators ``+ - * / // % < <= > >= == != & | ^ ~`` and unary
``-``:

* **dtype**: equal dtypes stay; float beats int; the wider float wins (f16 with bf16
  gives f32); the wider int wins. Scalars and Python numbers take the tile's dtype
  unless a float meets an int tile, which gives f32. ``/`` always gives a float.
* **shape**: tile values are 1-D or 2-D (numpy rules): a size-1 dimension broadcasts
  against any size (``[M, 1] + [M, N]``, ``[1, N] * [M, N]``), a 1-D value of N elements
  broadcasts with a 2-D value as the row ``[1, N]`` does (``bias + acc`` for an
  ``[M, N]`` ``acc``, a 2-D result), and scalars broadcast to any shape.  ``v[:, None]``
  makes a column of a 1-D value, ``v[None, :]`` a row (``expand_dims``, ``reshape``).
* **0-D values**: reducing a 1-D value along its axis (``xt.sum(v)``, ``xt.max(v,
  axis=0)``) gives a 0-D value (one element, as Triton's scalar result): it broadcasts
  like a scalar and is stored through a one-element tile.
"""
from __future__ import annotations

from .core import builtin


@builtin
def zeros(shape, dtype):
    """A value of ``shape`` (one or two constexprs) filled with 0 of ``dtype``.

    Example: ``acc = xt.zeros([BM, BN], xt.float32)``; 1-D: ``s = xt.zeros([BLOCK], xt.float32)``"""


@builtin
def full(shape, value, dtype):
    """A value of ``shape`` (one or two constexprs) filled with ``value`` of ``dtype``.

    Example: ``m = xt.full([BM, 1], float("-inf"), xt.float32)``"""


@builtin
def arange(start, end, dtype=None):
    """The 1-D value ``[start, start+1, ..., end-1]`` (``end-start`` elements, int32 by default).

    Both bounds are constexprs.  It broadcasts with 2-D values as the row ``[1, N]`` does;
    ``xt.arange(0, BM)[:, None]`` is a column. Example: ``cols = xt.arange(0, BN) + pid * BN``"""


@builtin
def where(condition, x, y):
    """Element-wise ``x if condition else y`` with broadcasting.

    Example: ``v = xt.where(v > 0, v, 0.0)``"""


@builtin
def astype(x, dtype, saturate=False):
    """``x`` converted to ``dtype`` (also ``x.to(dtype)`` / ``x.astype(dtype)``).

    Floats round to nearest even when narrowing and truncate toward zero into ints.
    Into fp8 (``xt.float8_e4m3fn``, ``xt.float8_e5m2``) a value past the largest finite
    one becomes NaN (e4m3fn, which has no inf) or inf (e5m2), as ml_dtypes does;
    ``saturate=True`` (a constexpr, fp8 results only) clamps it, and infinities, to the
    largest finite value instead; NaN stays NaN.  fp8 -> f16/bf16/f32 is exact.
    Example: ``out = xt.astype(acc, xt.bfloat16)``;
    ``q = xt.astype(v * scale, xt.float8_e4m3fn, saturate=True)``"""


def _unary(name: str, what: str):
    def stub(x):
        pass

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = f"Element-wise {what}; integer inputs are converted to f32. Example: ``y = xt.{name}(x)``"
    return builtin(stub)


exp = _unary("exp", "e**x")
exp2 = _unary("exp2", "2**x")
log = _unary("log", "natural logarithm")
log2 = _unary("log2", "base-2 logarithm")
sqrt = _unary("sqrt", "square root")
rsqrt = _unary("rsqrt", "1 / sqrt(x)")
sin = _unary("sin", "sine")
cos = _unary("cos", "cosine")
tanh = _unary("tanh", "hyperbolic tangent")
erf = _unary("erf", "error function")
sigmoid = _unary("sigmoid", "1 / (1 + exp(-x))")
tan = _unary("tan", "tangent")
asin = _unary("asin", "arc sine (NaN outside [-1, 1])")
acos = _unary("acos", "arc cosine (NaN outside [-1, 1])")
atan = _unary("atan", "arc tangent")
sinh = _unary("sinh", "hyperbolic sine")
cosh = _unary("cosh", "hyperbolic cosine")
asinh = _unary("asinh", "inverse hyperbolic sine")
acosh = _unary("acosh", "inverse hyperbolic cosine (NaN below 1)")
atanh = _unary("atanh", "inverse hyperbolic tangent (NaN outside [-1, 1])")
log10 = _unary("log10", "base-10 logarithm")
log1p = _unary("log1p", "log(1 + x), accurate near 0")
expm1 = _unary("expm1", "exp(x) - 1, accurate near 0")
erfc = _unary("erfc", "complementary error function 1 - erf(x), accurate where erf is near 1")
cbrt = _unary("cbrt", "cube root (negative for negative x)")
floor = _unary("floor", "largest integer value not above x")
ceil = _unary("ceil", "smallest integer value not below x")
trunc = _unary("trunc", "x rounded toward zero")
round = _unary("round", "x rounded to the nearest integer value, halfway cases away from zero (C's round)")  # noqa: A001


def _float_binary(name: str, what: str, example: str):
    def stub(x, y):
        pass

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = (f"Element-wise {what} with broadcasting; integer inputs are converted to f32, "
                    f"f16/bf16 compute in f32 and round once. Example: ``{example}``")
    return builtin(stub)


@builtin
def atan2(y, x):
    """Element-wise C ``atan2(y, x)``: the angle of the point (x, y), in [-pi, pi], with
    broadcasting; integer inputs are converted to f32, f16/bf16 compute in f32 and round
    once. Example: ``theta = xt.atan2(y, x)``"""


pow = _float_binary("pow", "``x ** y`` (C's pow: NaN for a negative x and a non-integer y)",  # noqa: A001
                    "y = xt.pow(x, 2.5)")
copysign = _float_binary("copysign", "``abs(x)`` with the sign bit of ``y``", "s = xt.copysign(1.0, x)")


@builtin
def fmod(x, y):
    """Element-wise C ``fmod``: ``x - trunc(x / y) * y``, exact, with the sign of ``x``.

    On floats a zero ``y`` gives NaN; on integers it is the truncating remainder (the sign
    of ``x``; by zero the result is ``x``), unlike the ``%`` operator, which is Python's
    floor modulo (the sign of ``y``). Example: ``phase = xt.fmod(t, 6.2831855)``"""


def _predicate(name: str, what: str):
    def stub(x):
        pass

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = (f"Element-wise bool (i1): {what}, usable as ``xt.where``'s condition; integer inputs "
                    f"are read as their float value. Example: ``v = xt.where(xt.{name}(v), 0.0, v)``")
    return builtin(stub)


isnan = _predicate("isnan", "true where x is NaN")
isinf = _predicate("isinf", "true where x is +inf or -inf")
isfinite = _predicate("isfinite", "true where x is neither infinite nor NaN")
signbit = _predicate("signbit", "true where x's sign bit is set (-0.0 and negative NaNs included)")


@builtin
def abs(x):  # noqa: A001 - the language's abs; Python's abs still folds constexprs
    """Element-wise absolute value (floats and ints). Example: ``d = xt.abs(a - b)``"""


@builtin
def item(x):
    """The one element of a one-element tile value (any shape of all 1s, e.g. a value
    reduced along both axes) as a runtime scalar of its dtype, usable as an offset, a
    loop bound or a condition; a number or scalar is returned unchanged. A value with
    more than one element is a compile error.

    Example::

        total = xt.item(xt.sum(xt.sum(v, axis=1), axis=0))   # [1, 1] -> scalar
        n = xt.item(xt.load_tile(xt.init_tile(sizes, [g, 0], [1, 1])))
    """


@builtin
def maximum(x, y):
    """Element-wise maximum (NaN-propagating for floats). Example: ``relu = xt.maximum(v, 0.0)``"""


@builtin
def minimum(x, y):
    """Element-wise minimum (NaN-propagating for floats). Example: ``v = xt.minimum(v, 6.0)``"""


@builtin
def fma(x, y, z):
    """Element-wise ``x * y + z`` with one rounding. Example: ``acc = xt.fma(a, b, acc)``"""


def _reduction(name: str, what: str):
    def stub(x, axis=None):
        pass

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = (f"The {what} of ``x`` along ``axis`` (0, 1 or None for both); on a 2-D value the "
                    f"reduced dimensions keep size 1 so the result broadcasts back; a 1-D value (axis 0 or "
                    f"None) gives a 0-D value. Example: ``r = xt.{name}(x, axis=1)``, "
                    f"``total = xt.{name}(v)`` for a 1-D ``v``")
    return builtin(stub)


sum = _reduction("sum", "sum")  # noqa: A001
max = _reduction("max", "maximum")  # noqa: A001
min = _reduction("min", "minimum")  # noqa: A001
prod = _reduction("prod", "product")


@builtin
def argmax(x, axis):
    """Index (int32) of the first maximum of ``x`` along ``axis``; that dimension keeps size 1.

    Example: ``best = xt.argmax(scores, axis=1)``"""


@builtin
def argmin(x, axis):
    """Index (int32) of the first minimum of ``x`` along ``axis``; that dimension keeps size 1."""


@builtin
def broadcast_to(x, shape):
    """``x`` repeated along its size-1 dimensions to ``shape`` (``xetile.tile_broadcast``); a
    1-D value broadcasts as the row ``[1, N]``, a 0-D value or scalar to any shape.

    Example: ``rows = xt.broadcast_to(bias, [BM, BN])`` (a 1-D ``bias`` of BN elements)"""


@builtin
def expand_dims(x, axis):
    """``x`` with a size-1 dimension inserted at ``axis`` (numpy's ``expand_dims``): a 1-D
    value becomes the row ``[1, N]`` (axis 0) or the column ``[N, 1]`` (axis 1 or -1), a 0-D
    value a 1-D value of one element.  ``v[None, :]`` and ``v[:, None]`` say the same.

    Example: ``col = xt.expand_dims(xt.arange(0, BM), 1)``"""


@builtin
def reshape(x, shape):
    """``x`` with the same elements (row-major) in ``shape`` (one or two constexprs).  Values
    are at most 2-D, so the reshapes are those that add or drop size-1 dimensions: 1-D
    ``[N]`` <-> row ``[1, N]`` <-> column ``[N, 1]``, 0-D <-> ``[1]`` <-> ``[1, 1]``.

    Example: ``v = xt.reshape(xt.sum(x, axis=1), [BM])`` (an ``[BM, 1]`` column as 1-D)"""


@builtin
def transpose(x, wg_map=None, source_wg_map=None):
    """The transpose of a 2-D value (``xetile.tile_transpose``). Example: ``vt = xt.transpose(v)``

    A 1-D value is taken as the row ``[1, N]`` and gives the column ``[N, 1]`` (the form
    kernels used before 1-D values; ``v[:, None]`` says it the numpy way).

    At workgroup level ``wg_map`` distributes the result and ``source_wg_map`` (optional,
    else the producer's map) the source, as in the RFC's ``tile_transpose {#mp_bt #mp_b}``."""


@builtin
def tile_reduce(kind, x, axis):
    """The RFC's ``tile_reduce``: ``kind`` is "add", "mul", "max", "min" (or an arith kind such as
    "maximumf"); ``axis`` an int or a list. Example: ``s = xt.tile_reduce("add", v, [1])``"""


@builtin
def tile_broadcast(x, shape):
    """The RFC's ``tile_broadcast`` (same as :func:`broadcast_to`)."""


@builtin
def tile_transpose(x, wg_map=None, source_wg_map=None):
    """The RFC's ``tile_transpose`` (same as :func:`transpose`)."""


def static_range(*args):
    """``for i in xt.static_range(4):`` -- a loop unrolled at compile time; ``i`` is a constexpr."""
    return range(*args)


static_range.__xetile_static_range__ = True


@builtin
def extern(name, *args, result=None, numpy_impl=None):
    """Call the OpenCL builtin ``name`` (the role of Triton's libdevice calls) element-wise
    over tile values, broadcast like other element-wise ops, or on scalars.

    ``result`` is the builtin's return dtype. Each argument is passed in its own type
    (Python ints as int32, floats as float32; float16/bfloat16 values are passed as float32
    and a float16/bfloat16 ``result`` is rounded once), and the name is mangled from those
    types (``hypot`` on f32 vectors of 8 calls ``_Z5hypotDv8_fS_``).  ``numpy_impl`` is the
    host function the interpreter runs instead (``XETILE_INTERPRET=1``), never called on the
    device; without it the interpreter refuses the call.  A name the OpenCL library lacks
    fails when the kernel is linked (ocloc names the unresolved builtin).

    Example::

        r = xt.extern("hypot", x, y, result=xt.float32, numpy_impl=np.hypot)
        s = xt.extern("ldexp", x, e, result=xt.float32, numpy_impl=np.ldexp)  # e: int32
    """
