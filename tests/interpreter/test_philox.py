"""The numpy definition of the random numbers (xetile_dsl/interpreter/philox.py) against
independent anchors: Random123's Philox4x32-10 known-answer vectors (kat_vectors: counter,
key, result), and values Triton 3.8's ``tl.randint``/``tl.rand``/``tl.randn`` produced for
the same seeds and offsets (recorded from its interpreter, TRITON_INTERPRET=1)."""
from __future__ import annotations

import numpy as np
import pytest

from xetile_dsl.interpreter import philox as ref

# Random123 kat_vectors, "philox4x32 10": counter (4 words), key (2 words), result (4 words)
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]

OFFSETS = np.array([0, 1, 2, 3, -1, 2**31 - 1, -(2**31), 123456], np.int32)
# seed -> (tl.randint, tl.rand as f32 bits, tl.randn as f32 bits) at OFFSETS
TRITON = {
    12345: ([0xD1FA3E81, 0x00B66929, 0x6C2CD495, 0xB63E5C16, 0xCA8B632D, 0xD3BD45AD, 0xF5650FFC, 0x06D6485A],
            [0x3EB81705, 0x3BB66928, 0x3F5859A8, 0x3F138347, 0x3ED5D272, 0x3EB10AE8, 0x3DA9AEFF, 0x3D5AC90A],
            [0xBF7C7A6C, 0xBF460F0C, 0xBEA4CBB2, 0x3EC62E2E, 0x3E909EF1, 0xBF7C2CCB, 0xC004692A, 0xBEEB0E15]),
    -(2**40) - 5: ([0x847DA26A, 0x8043DCAA, 0xA765BBD8, 0xC19BD456, 0xA7E1EC52, 0x46D17657, 0xD173ADD7, 0x939110D1],
                   [0x3F7704BA, 0x3F7F7846, 0x3F313487, 0x3EF990AE, 0x3F303C26, 0x3F0DA2EC, 0x3EBA3148, 0x3F58DDDD],
                   [0x3AC21DF6, 0x3D837A17, 0xBF5AAC5E, 0xBE9835EA, 0xBEF12ACC, 0x3F8655B8, 0xBF4D086D, 0xBE9622C5]),
}


@pytest.mark.parametrize("counter,key,expect", KAT)
def test_philox4x32_10_known_answers(counter, key, expect):
    seed = key[0] | key[1] << 32          # Triton's split: k0 the low half, k1 the high half
    got = ref.philox(seed, *(np.array([c], np.uint32) for c in counter))
    assert [int(w[0]) for w in got] == list(expect)


@pytest.mark.parametrize("seed", list(TRITON))
def test_matches_triton(seed):
    ints, uniform, normal = TRITON[seed]
    np.testing.assert_array_equal(ref.randint(seed, OFFSETS), np.array(ints, np.uint32))
    np.testing.assert_array_equal(ref.rand(seed, OFFSETS).view(np.uint32), np.array(uniform, np.uint32))
    # numpy's f32 log/sqrt/cos, as Triton's interpreter used: the same bits
    np.testing.assert_array_equal(ref.randn(seed, OFFSETS).view(np.uint32), np.array(normal, np.uint32))


def test_seed_key_is_the_twos_complement_halves():
    assert ref.seed_key(-1) == (0xFFFFFFFF, 0xFFFFFFFF)
    assert ref.seed_key(-7) == (0xFFFFFFF9, 0xFFFFFFFF)     # an int32 seed sign-extends
    assert ref.seed_key(2**40 + 3) == (3, 2**8)


def test_uniform_ends():
    """``~x`` folds the int32 halves onto [0, 2**31 - 1]; the scale keeps the top below 1."""
    x = np.array([0, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF], np.uint32)
    u = ref.uniform(x)
    assert u[0] == 0.0 and u[3] == 0.0 and u[1] == u[2] and u[1] < 1.0
