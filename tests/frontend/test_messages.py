"""Messages for what a user coming from Triton or numpy reaches for: each located at the
user's line, saying what to write instead, the same in the interpreter and compiled."""
from __future__ import annotations

import numpy as np
import pytest

from xetile_dsl import CacheKeyError, CompilationError
from xetile_dsl.frontend import suggestions

import xetile_dsl.language as xt

from . import message_kernels as mk

A = np.zeros((16, 16), np.float32)


@pytest.mark.parametrize("target", ["interpret", "cpu-pvc"])
@pytest.mark.parametrize("kernel, args, line, fragments, absent", [
    (mk.uses_rand, (A,), 12, ["has no attribute 'rand'", "xt.rand is not available yet",
                              "make the random numbers on the host"], "did you mean"),
    (mk.uses_math_asin, (A,), 18, ["math.asin is not a kernel function", "xt has no asin",
                                   "xt.sin", "xt.sqrt"], "cache key"),
    (mk.uses_numpy_exp, (A,), 24, ["np.exp is not a kernel function; use xt.exp"], "cache key"),
    (mk.uses_math_sqrt, (A,), 30, ["math.sqrt is not a kernel function; use xt.sqrt"], "cache key"),
    (mk.min_of_runtime_scalars, (A, 1, 2), 35, ["min() must be a compile-time constant",
                                                "for runtime values use xt.minimum(a, b)"], None),
    (mk.max_of_runtime_scalars, (A, 1, 2), 41, ["max() must be a compile-time constant",
                                                "for runtime values use xt.maximum(a, b)"], None),
    (mk.masked_load_tile, (A, 3), 47, ["load_tile(): masks are not supported on load_tile",
                                       "xt.load_gather(tile, mask)", "padding"], "unexpected keyword"),
    (mk.typo_of_ours, (A,), 53, ["has no attribute 'laod_tile'; did you mean xt.load_tile"], None),
], ids=["rand", "math.asin", "np.exp", "math.sqrt", "min", "max", "load_tile-mask", "typo"])
def test_message_at_the_users_line(kernel, args, line, fragments, absent, target):
    with pytest.raises(CompilationError) as info:
        kernel.on(target)[(1,)](*args)
    assert not isinstance(info.value, CacheKeyError)
    text = str(info.value)
    assert f"message_kernels.py:{line}:" in text and "^" in text, text
    for fragment in fragments:
        assert fragment in text, text
    assert absent is None or absent not in text, text


def test_names_triton_has_and_we_lack_are_never_guessed_at():
    """Names said to be not available yet are not ours (else they would be wrong), and
    none of them gets a look-alike suggestion; real typos still do."""
    assert not any(hasattr(xt, name) for name in suggestions.TRITON_NOT_YET)
    for name in suggestions.TRITON_NOT_YET:
        assert "did you mean" not in suggestions.hint(name), name
    assert suggestions.hint("zero") == "; did you mean xt.zeros?"
    assert "xt.tile_mma" in suggestions.hint("tile_mm")
    assert all(hasattr(xt, name) for name in suggestions.XT_MATH)
