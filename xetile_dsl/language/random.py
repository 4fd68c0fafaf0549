"""Counter-based random numbers: Philox4x32-10, bit for bit as Triton's ``tl.randint``,
``tl.randint4x``, ``tl.rand``, ``tl.randn``, ``tl.rand4x`` and ``tl.randn4x`` (and
``tl.philox``, ``tl.umulhi``).

A draw is a pure function of ``(seed, offsets)``: the same seed and offsets give the same
numbers in every program, every flavour and every launch, and nothing is stored between
calls.  ``seed`` is an integer (a constexpr or a runtime scalar, 32 or 64 bits: its two
32-bit halves are the Philox key, a negative seed counting as its two's complement);
``offsets`` is an int32 or uint32 tile, scalar or number (the Philox counter's first
word; an int scalar such as ``xt.program_id(0)`` is taken as int32, as Triton's is).  Use distinct offsets for distinct numbers, e.g. the elements' global indices.

The exact arithmetic is spelled out in ``xetile_dsl/interpreter/philox.py``, the numpy
definition the tests compare against."""
from __future__ import annotations

from .core import builtin


@builtin
def philox(seed, c0, c1, c2, c3, n_rounds=10):
    """Philox4x32 with ``n_rounds`` rounds of the counter ``(c0, c1, c2, c3)`` under the key of
    ``seed``: a tuple of four uint32 values shaped like the counters broadcast together.

    Example: ``a, b, c, d = xt.philox(seed, offs, 0, 0, 0)``"""


@builtin
def randint4x(seed, offsets, n_rounds=10):
    """Four uint32 random values per offset: ``philox(seed, offsets, 0, 0, 0)``.

    Example: ``r0, r1, r2, r3 = xt.randint4x(seed, offs)``"""


@builtin
def randint(seed, offsets, n_rounds=10):
    """One uint32 random value per offset (the first word of :func:`randint4x`).

    Example: ``bits = xt.randint(seed, offs)``"""


@builtin
def rand(seed, offsets, n_rounds=10):
    """float32 uniform in [0, 1) per offset: :func:`randint`'s word read as int32, ``~x``
    for negatives, times ``4.6566127342e-10``.

    Example: ``keep = xt.rand(seed, offs) > p``"""


@builtin
def randn(seed, offsets, n_rounds=10):
    """float32 standard normal per offset: Box-Muller of :func:`randint4x`'s first two words,
    ``sqrt(-2 log(max(1e-7, u1))) * cos(2 pi u2)``.

    Example: ``noise = xt.randn(seed, offs) * sigma``"""


@builtin
def rand4x(seed, offsets, n_rounds=10):
    """Four float32 uniforms in [0, 1) per offset: :func:`rand`'s conversion of each word of
    :func:`randint4x`. Example: ``u0, u1, u2, u3 = xt.rand4x(seed, offs)``"""


@builtin
def randn4x(seed, offsets, n_rounds=10):
    """Four float32 standard normals per offset: Box-Muller (cosine and sine outputs) of
    :func:`rand4x`'s pairs (u0, u1) and (u2, u3). Example: ``n0, n1, n2, n3 = xt.randn4x(seed, offs)``"""


@builtin
def umulhi(x, y):
    """The high 32 bits of the 64-bit product of two 32-bit integers read as unsigned
    (element-wise, broadcasting; the result has the operands' 32-bit type).

    Example: ``hi = xt.umulhi(a, xt.astype(0xD2511F53, xt.uint32))``"""
