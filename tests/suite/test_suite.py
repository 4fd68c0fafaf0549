"""Every suite kernel in the numpy interpreter and, where lowered, compiled on the CPU
device (PVC and ARC flavours), against numpy."""
from __future__ import annotations

import numpy as np
import pytest

from suite_kernels import BF16, cases
from tf32_ref import tf32_matmul_ref

CASES = {c.name: c for c in cases()}


def _run(case, target):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    case.kernel.on(target)[case.grid](*args, **case.constexprs)
    return args


def _check(case, args):
    for index, expected in case.outputs.items():
        got = args[index]
        np.testing.assert_allclose(got.astype(np.float64), np.asarray(expected).astype(np.float64),
                                   rtol=case.rtol, atol=case.atol, err_msg=case.name)


def test_suite_has_at_least_twenty_kernels():
    assert len(CASES) >= 20


@pytest.mark.parametrize("name", sorted(CASES))
def test_interpreter(name):
    case = CASES[name]
    _check(case, _run(case, "interpret"))


COMPILED = [(n, f) for n, c in sorted(CASES.items()) for f in c.compiled]


@pytest.mark.parametrize("name,flavour", COMPILED)
def test_compiled_cpu_device(name, flavour):
    case = CASES[name]
    _check(case, _run(case, f"cpu-{flavour}"))


def test_the_tf32_case_rejects_f32_and_bf16_arithmetic():
    """gemm_tf32's bound can fail: the same GEMM with the inputs not rounded (plain f32) or
    rounded to bf16 instead of tf32 is outside it."""
    case = CASES["gemm_tf32"]
    a, b = case.args[0], case.args[1]
    expected, bound = tf32_matmul_ref(a, b)
    assert case.atol == bound and case.rtol == 0.0
    plain = a.astype(np.float64) @ b.astype(np.float64)
    bf16 = a.astype(BF16).astype(np.float64) @ b.astype(BF16).astype(np.float64)
    assert np.abs(plain - expected).max() > 2 * bound
    assert np.abs(bf16 - expected).max() > 2 * bound
