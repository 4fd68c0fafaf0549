"""Int scalars (``xt.program_id``, arithmetic on it) where the library takes 32-bit words or
chooses ints into a tile: ``xt.philox``/``randint``/``umulhi`` take them as int32 (as they
take a number; Triton's program ids are int32), and ``xt.where(mask, 1, pid)`` is an int32
tile that stores into an int32 array.  Both were refused ("got int", "value dtype index")
before the fuzzer's lib family drew them.  Checked against the numpy Philox definition
(exact: integer results) in the interpreter, and the IR's types at the compiler's front."""
from __future__ import annotations

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.compiler import to_xetile
from xetile_dsl.dialects import print_module
from xetile_dsl.interpreter import philox

B = 16


@xd.jit
def pid_words(ph, hi, ch, seed, B: xt.constexpr):
    pid = xt.program_id(0)
    offs = xt.arange(0, B) + pid * B
    p0, p1, p2, p3 = xt.philox(seed, offs, pid, 0, pid * 3 + 1, n_rounds=3)
    xt.store_tile(p0 ^ p3 ^ xt.randint(seed, pid), xt.init_tile(ph, [pid * B], [B]))
    xt.store_tile(xt.umulhi(offs * 40503, pid * 977 + 3), xt.init_tile(hi, [pid * B], [B]))
    xt.store_tile(xt.where(offs % 3 == 0, 1, pid), xt.init_tile(ch, [pid * B], [B]))


def test_program_ids_as_philox_words_and_where_choices():
    G, seed = 3, 2**40 + 11
    ph, hi, ch = np.zeros(G * B, np.uint32), np.zeros(G * B, np.int32), np.full(G * B, -7, np.int32)
    pid_words.on("interpret")[(G,)](ph, hi, ch, seed, B=B)
    offs = np.arange(G * B)
    pid = offs // B
    w = philox.philox(seed, offs, pid, 0, pid * 3 + 1, 3)
    np.testing.assert_array_equal(ph, w[0] ^ w[3] ^ philox.randint(seed, pid))
    np.testing.assert_array_equal(hi, philox.umulhi(offs * 40503, pid * 977 + 3).view(np.int32))
    np.testing.assert_array_equal(ch, np.where(offs % 3 == 0, 1, pid))


def test_the_choice_of_ints_is_an_int32_tile():
    text = print_module(to_xetile(pid_words, {"ph": "u32[:]", "hi": "i32[:]", "ch": "i32[:]", "seed": "i64"},
                                  {"B": B}, "pvc"))
    assert "vector<16xindex>" not in text, text
    assert "arith.index_cast" in text  # the program id taken as an int32 word
