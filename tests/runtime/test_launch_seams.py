"""Seams on the launch path a user reaches first: the README's dpnp example in a fresh
process (dpnp imported after xetile_dsl must find the device our kernels run on), and the
interpreter given device arrays (dpnp, pyopencl) instead of numpy ones."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from xetile_dsl.kernels.matmul import matmul_kernel

from conftest_tools import require_dpnp, require_module


README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_block(marker: str) -> str:
    """The README's python code block containing ``marker``."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"expected one README python block with {marker!r}, found {len(found)}"
    return found[0]


def test_readme_dpnp_example_runs_verbatim_in_a_fresh_process(tmp_path):
    require_dpnp()
    script = "\n".join([
        _readme_block("matmul[(10, 7)]"),                 # "A kernel": defines matmul, a, b (numpy)
        _readme_block("import dpnp"),                    # "Arrays, launches and synchronisation"
        "ref = a.astype(np.float32) @ b.astype(np.float32)",
        "print('ERR', float(np.abs(dpnp.asnumpy(c_dev) - ref).max()))",
    ])
    path = tmp_path / "readme_dpnp.py"
    path.write_text(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OCL_ICD", "SYCL_", "ONEAPI_DEVICE"))}
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    err = float(re.search(r"ERR (\S+)", out.stdout).group(1))
    # f16 inputs in [0, 1), K = 96, f32 accumulation: each product is exact in f32, the
    # sum of 96 terms below 96 carries at most 96 * 2**-24 * 96 of rounding.
    assert err <= 96 * 96 * 2.0 ** -24


CONST = {"BM": 32, "BN": 32, "BK": 32}


def _ab(m=64, k=64, n=64, seed=3):
    rng = np.random.default_rng(seed)
    return rng.integers(-3, 4, (m, k)).astype(np.float16), rng.integers(-3, 4, (k, n)).astype(np.float16)


@pytest.mark.parametrize("target", ["interpret", "interpret-subgroups"])
def test_interpreter_takes_dpnp_arrays_and_writes_them_back(target):
    dpnp = require_dpnp()
    a, b = _ab()
    da, db = dpnp.asarray(a), dpnp.asarray(b)
    dc = dpnp.full((64, 64), -7.0, dtype=np.float32)
    matmul_kernel.on(target)[(2, 2)](da, db, dc, 64, **CONST)
    # small integers: every product and partial sum is exact, so equality is the reference
    np.testing.assert_array_equal(dpnp.asnumpy(dc), a.astype(np.float32) @ b.astype(np.float32))
    np.testing.assert_array_equal(dpnp.asnumpy(da), a)           # read-only inputs untouched


def test_interpreter_orders_after_work_queued_on_the_arrays():
    """A compiled launch enqueues asynchronously; the interpreter run right after must see
    its result (it copies after the queue's earlier work)."""
    dpnp = require_dpnp()
    a, b = _ab(seed=4)
    da, db = dpnp.asarray(a), dpnp.asarray(b)
    dc = dpnp.zeros((64, 64), dtype=np.float32)
    matmul_kernel[(2, 2)](da, db, dc, 64, **CONST)                  # compiled, asynchronous
    a2 = dpnp.asarray(dpnp.asnumpy(dc)[:, :64].astype(np.float16))  # the product feeds the next launch
    dd = dpnp.zeros((64, 64), dtype=np.float32)
    matmul_kernel.on("interpret")[(2, 2)](a2, db, dd, 64, **CONST)
    first = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(dpnp.asnumpy(dd), first @ b.astype(np.float32))


def test_interpreter_takes_pyopencl_arrays():
    cl = require_module("pyopencl")
    import pyopencl.array as cla

    from xetile_dsl.runtime.devices import get_device

    ctx = cl.Context(devices=[get_device("opencl:cpu", "pyopencl").native])
    queue = cl.CommandQueue(ctx)
    a, b = _ab(seed=5)
    ca, cb = cla.to_device(queue, a), cla.to_device(queue, b)
    cc = cla.zeros(queue, (64, 64), np.float32)
    matmul_kernel.on("interpret")[(2, 2)](ca, cb, cc, 64, **CONST)
    np.testing.assert_array_equal(cc.get(), a.astype(np.float32) @ b.astype(np.float32))
