"""Philox4x32-10 and the Triton-compatible draws built on it, in numpy.

This is the definition the kernel language's ``xt.randint``/``rand``/``randn`` follow
(``frontend/random_ops.py`` builds the same arithmetic as IR) and the reference the
tests compare every flavour against; the tests anchor it on the published Random123
known-answer vectors.  Values follow Triton's ``triton.language.random``:

* the key is the 64-bit seed split in two words, ``k0 = seed & 0xffffffff`` and
  ``k1 = (seed >> 32) & 0xffffffff`` (a negative seed in two's complement, as
  Triton's sign-extending cast of an int32/int64 seed to uint64 gives);
* ``randint4x(seed, offsets)`` runs Philox on the counter ``(offsets, 0, 0, 0)``;
* ``uniform(x)`` reads the uint32 ``x`` as int32, folds negatives with ``-x - 1``
  (``~x``) and multiplies by the float32 ``4.6566127342e-10`` (the largest scale with
  ``(2**31 - 1) * scale < 1`` in f32 rounding), so results lie in [0, 1);
* ``randn`` is the first Box-Muller output of the first two words:
  ``sqrt(-2 log(max(1e-7, u1))) * cos(6.283185307179586 * u2)``, all in float32.
"""
from __future__ import annotations

import numpy as np

#: Weyl key increments and round multipliers (Salmon et al., "Parallel random numbers:
#: as easy as 1, 2, 3", SC 2011; the constants of Random123's philox4x32)
KEY_A, KEY_B = 0x9E3779B9, 0xBB67AE85
ROUND_A, ROUND_B = 0xD2511F53, 0xCD9E8D57
N_ROUNDS = 10
UNIFORM_SCALE = np.float32(4.6566127342e-10)
BOX_MULLER_MIN = np.float32(1.0e-7)
TWO_PI = np.float32(6.283185307179586)

_U32 = np.uint32


def seed_key(seed: int) -> tuple[int, int]:
    """The Philox key words ``(k0, k1)`` of an integer seed (64-bit two's complement)."""
    bits = int(seed) & 0xFFFFFFFFFFFFFFFF
    return bits & 0xFFFFFFFF, bits >> 32


def umulhi(a, b) -> np.ndarray:
    """The high 32 bits of the 64-bit product of two uint32 arrays."""
    wide = np.asarray(a).astype(_U32).astype(np.uint64) * np.asarray(b).astype(_U32).astype(np.uint64)
    return (wide >> np.uint64(32)).astype(_U32)


def philox(seed: int, c0, c1, c2, c3, n_rounds: int = N_ROUNDS):
    """Philox4x32 with ``n_rounds`` rounds of the counter ``(c0, c1, c2, c3)`` (arrays or
    ints, read as uint32 bits) under the key of ``seed``: four uint32 arrays."""
    shape = np.broadcast_shapes(*(np.shape(c) for c in (c0, c1, c2, c3)))
    c = [np.broadcast_to(np.asarray(v).astype(np.int64).astype(_U32), shape).copy() for v in (c0, c1, c2, c3)]
    k0, k1 = (_U32(k) for k in seed_key(seed))
    with np.errstate(over="ignore"):
        for _ in range(n_rounds):
            hi_b, hi_a = umulhi(ROUND_B, c[2]), umulhi(ROUND_A, c[0])
            lo_b, lo_a = _U32(ROUND_B) * c[2], _U32(ROUND_A) * c[0]
            c = [hi_b ^ c[1] ^ k0, lo_b, hi_a ^ c[3] ^ k1, lo_a]
            k0, k1 = _U32(k0) + _U32(KEY_A), _U32(k1) + _U32(KEY_B)
    return tuple(c)


def randint4x(seed: int, offsets, n_rounds: int = N_ROUNDS):
    """Four uint32 arrays: Philox of the counter ``(offsets, 0, 0, 0)``."""
    return philox(seed, offsets, 0, 0, 0, n_rounds)


def randint(seed: int, offsets, n_rounds: int = N_ROUNDS) -> np.ndarray:
    """The first word of :func:`randint4x` (uint32)."""
    return randint4x(seed, offsets, n_rounds)[0]


def uniform(x) -> np.ndarray:
    """uint32 bits -> float32 in [0, 1), as Triton's ``uint_to_uniform_float``."""
    s = np.asarray(x).astype(_U32).view(np.int32)
    folded = np.where(s < 0, ~s, s)
    return folded.astype(np.float32) * UNIFORM_SCALE


def rand(seed: int, offsets, n_rounds: int = N_ROUNDS) -> np.ndarray:
    """float32 uniform in [0, 1): :func:`uniform` of :func:`randint`."""
    return uniform(randint(seed, offsets, n_rounds))


def box_muller(u1, u2):
    """The pair ``(r cos(th), r sin(th))`` of two float32 uniforms, float32 throughout."""
    r = np.sqrt(np.float32(-2.0) * np.log(np.maximum(BOX_MULLER_MIN, u1)))
    th = TWO_PI * u2
    return r * np.cos(th), r * np.sin(th)


def randn(seed: int, offsets, n_rounds: int = N_ROUNDS) -> np.ndarray:
    """float32 standard normal: Box-Muller's first output of the first two words."""
    i1, i2, _, _ = randint4x(seed, offsets, n_rounds)
    return box_muller(uniform(i1), uniform(i2))[0]


def rand4x(seed: int, offsets, n_rounds: int = N_ROUNDS):
    """Four float32 uniforms: :func:`uniform` of each word of :func:`randint4x`."""
    return tuple(uniform(w) for w in randint4x(seed, offsets, n_rounds))


def randn4x(seed: int, offsets, n_rounds: int = N_ROUNDS):
    """Four float32 normals: Box-Muller of :func:`rand4x`'s pairs (first, second), (third, fourth)."""
    u = rand4x(seed, offsets, n_rounds)
    return box_muller(u[0], u[1]) + box_muller(u[2], u[3])
