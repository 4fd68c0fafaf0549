"""``xt.randint4x``/``randint``/``rand``/``randn`` against values Triton 3.6 computed on an
NVIDIA H200 (``tests/interpreter/data/triton_random.npz``, written by
``scripts/triton_random_reference.py``; ``triton_random_meta.json`` beside it records the
versions and that Triton's ``tl.randint`` equalled word 0 of its ``tl.randint4x``): eight
seeds (32-bit, negative and 64-bit ones) at offsets 0..1023 and eight large/negative
offsets, in the interpreter and on the CPU device.

Integer words and ``rand`` must be equal bit for bit (integer arithmetic, then one
int->f32 conversion and one f32 multiply, both correctly rounded on either machine).
``randn`` composes log, sqrt and cos, whose f32 results are implementation-defined
within their ulp bounds (OpenCL: 3, 3 and 4 ulp; CUDA's libdevice is tighter), so the
contract is 4 ulp of Triton's value."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from tests.e2e.test_random import C, R, _ulps, draws
from xetile_dsl.interpreter import philox as ref

DATA = Path(__file__).parents[1] / "interpreter" / "data"
TRITON = np.load(DATA / "triton_random.npz", allow_pickle=False)
BIG = 64    # the interpreter's rows per launch: all 1,032 offsets in one 64 x 32 tile


@xd.jit
def big_draws(o, w0, w1, w2, w3, one, u, n, seed, ROWS: xt.constexpr):
    """``draws`` of test_random.py over a ``ROWS x 32`` tile (one launch per seed in the
    interpreter, whose cost is per op, not per element)."""
    offs = xt.load_tile(xt.init_tile(o, [0, 0], [ROWS, C]))
    r0, r1, r2, r3 = xt.randint4x(seed, offs)
    xt.store_tile(r0, xt.init_tile(w0, [0, 0], [ROWS, C]))
    xt.store_tile(r1, xt.init_tile(w1, [0, 0], [ROWS, C]))
    xt.store_tile(r2, xt.init_tile(w2, [0, 0], [ROWS, C]))
    xt.store_tile(r3, xt.init_tile(w3, [0, 0], [ROWS, C]))
    xt.store_tile(xt.randint(seed, offs), xt.init_tile(one, [0, 0], [ROWS, C]))
    xt.store_tile(xt.rand(seed, offs), xt.init_tile(u, [0, 0], [ROWS, C]))
    xt.store_tile(xt.randn(seed, offs), xt.init_tile(n, [0, 0], [ROWS, C]))


def _run(target: str, seed: int, offsets: np.ndarray):
    """Words 0-3, randint, rand and randn of ``seed`` at ``offsets`` (flat arrays): on the
    CPU device test_random.py's ``R x C`` kernel (compiled once for both files), one tile
    per launch; in the interpreter one ``BIG x C`` launch.  Offsets past the data are 0."""
    rows = BIG if target == "interpret" else R
    padded = np.zeros(-(-offsets.size // (rows * C)) * rows * C, np.int32)
    padded[:offsets.size] = offsets
    outs = []
    for o in padded.reshape(-1, rows, C):
        words = [np.zeros((rows, C), np.uint32) for _ in range(5)]
        u, n = np.zeros((rows, C), np.float32), np.zeros((rows, C), np.float32)
        o = np.ascontiguousarray(o)
        if target == "interpret":
            big_draws.on(target)[(1,)](o, *words, u, n, seed, ROWS=rows)
        else:
            draws.on(target)[(1,)](o, *words, u, n, seed)
        outs.append(words + [u, n])
    return [np.concatenate([chunk[k].ravel() for chunk in outs])[:offsets.size] for k in range(7)]


def test_reference_data_is_what_the_script_describes():
    meta = json.loads((DATA / "triton_random_meta.json").read_text())
    assert meta["triton"].startswith("3.6") and meta["randint_equals_randint4x_word0"]
    seeds, offsets = TRITON["seeds"], TRITON["offsets"]
    assert TRITON["randint4x"].shape == (seeds.size, 4, offsets.size) and offsets.dtype == np.int32
    np.testing.assert_array_equal(offsets[:1024], np.arange(1024))
    assert {2**31 - 1, -1, -(2**31)} <= set(offsets.tolist())
    assert any(s >= 2**32 for s in seeds) and any(s < 0 for s in seeds) and any(0 < s < 2**31 for s in seeds)


def test_numpy_definition_equals_triton():
    for i, seed in enumerate(TRITON["seeds"].tolist()):
        o = TRITON["offsets"]
        np.testing.assert_array_equal(np.stack(ref.randint4x(seed, o)), TRITON["randint4x"][i], err_msg=f"{seed}")
        np.testing.assert_array_equal(ref.rand(seed, o).view(np.uint32), TRITON["rand"][i].view(np.uint32))
        assert _ulps(ref.randn(seed, o), TRITON["randn"][i]).max() <= 4, f"seed {seed}"


@pytest.mark.parametrize("target", ["interpret", "cpu"])
def test_kernel_draws_equal_triton(target):
    for i, seed in enumerate(TRITON["seeds"].tolist()):
        w0, w1, w2, w3, one, u, n = _run(target, seed, TRITON["offsets"])
        np.testing.assert_array_equal(np.stack([w0, w1, w2, w3]), TRITON["randint4x"][i], err_msg=f"seed {seed}")
        np.testing.assert_array_equal(one, TRITON["randint4x"][i][0], err_msg=f"seed {seed}")
        np.testing.assert_array_equal(u.view(np.uint32), TRITON["rand"][i].view(np.uint32), err_msg=f"seed {seed}")
        assert _ulps(n, TRITON["randn"][i]).max() <= 4, f"seed {seed}"
