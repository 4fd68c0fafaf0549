"""GEMMs whose K loop xegpu-rotate-loads runs two steps per trip (the second step's loads
issued before the first step's DPAS; the last step of an odd count once after the loop),
run on the CPU device in both flavours against numpy and the interpreter.

Small-integer f16 operands make every product and sum exact in f32, so the results must
equal numpy's bit for bit whatever the order of the K steps.  K covers an even and an odd
number of steps, one step only (the two-step loop does not run), and K not a multiple of
the step (the last step reads past K: zeros).  The IR check makes sure the pass applied:
the two-step loop holds twice the DPAS of one step and the last step once more; and
that it did not where two steps of operands exceed the register budget."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationWarning
from xetile_dsl.frontend.argspec import ArgSpec
from xetile_dsl.kernels.gemm_wg import gemm_wg_kernel
from xetile_dsl.kernels.matmul import matmul_kernel

#: name -> (kernel, constexprs, tile rows, tile columns): the M = 16 workgroup GEMM of
#: tests/isa/test_small_m_isa.py (4 subgroups across instead of 16: the same 16x16
#: piece) and the README's GEMM at 16x32 tiles, both within the register budget
KERNELS = {
    "m16": (gemm_wg_kernel, {"BM": 16, "BN": 64, "BK": 32, "SM": 1, "SN": 4, "PF": 3, "ACC": xt.float32}, 16, 64),
    "readme16x32": (matmul_kernel, {"BM": 16, "BN": 32, "BK": 16}, 16, 32),
}
#: kernels whose two steps exceed the budget (32x16 and 32x32 f32 pieces fill 128 GRFs)
ONE_STEP = {
    "m64": (gemm_wg_kernel, {"BM": 64, "BN": 64, "BK": 32, "SM": 2, "SN": 4, "PF": 3, "ACC": xt.float32}),
    "readme32x32": (matmul_kernel, {"BM": 32, "BN": 32, "BK": 16}),
}
#: K values: even and odd step counts, one step, K not a multiple of the step
KS = {"m16": (128, 96, 32, 80), "readme16x32": (64, 48, 16, 40)}
SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": ArgSpec("scalar", "i32")}


def _operands(m, n, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b = rng.integers(-3, 4, (k, n)).astype(np.float16)
    return a, b, a.astype(np.float32) @ b.astype(np.float32)


def _run(name, target, k):
    kernel, consts, rows, cols = KERNELS[name]
    a, b, ref = _operands(rows * 2, cols * 2, k, k)
    c = np.full(ref.shape, np.nan, np.float32)
    with warnings.catch_warnings():   # the prefetch plan's note on the re-dealt B prefetch map
        warnings.simplefilter("ignore", CompilationWarning)
        warnings.simplefilter("ignore", UserWarning)
        kernel.on(target)[(2, 2)](a, b, c, k, **consts)
    return c, ref


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_two_step_k_loop_matches_numpy(name, target):
    for k in KS[name]:
        c, ref = _run(name, target, k)
        np.testing.assert_array_equal(c, ref, err_msg=f"{name} on {target}, K = {k}")


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_pass_ran_two_steps_per_trip(name, target):
    kernel, consts, _, _ = KERNELS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asm = xd.compile(kernel, SIG, consts, target=target).asm
    per_step = asm["xegpu"].count("xegpu.dpas ")
    assert per_step > 0 and asm["simt"].count("xegpu.dpas ") == 3 * per_step


def test_interpreter_agrees():
    """The interpreter runs the frontend's IR, before any lowering: the compiled two-step
    loop must give its results."""
    compiled, ref = _run("m16", "cpu-pvc", 96)
    interpreted, _ = _run("m16", "interpret", 96)
    np.testing.assert_array_equal(interpreted, ref)
    np.testing.assert_array_equal(compiled, interpreted)


@pytest.mark.parametrize("name", sorted(ONE_STEP))
def test_no_second_step_without_room(name):
    kernel, consts = ONE_STEP[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asm = xd.compile(kernel, SIG, consts, target="cpu-pvc").asm
    assert asm["simt"].count("xegpu.dpas ") == asm["xegpu"].count("xegpu.dpas ")


def test_off_knob_keeps_one_step(monkeypatch):
    monkeypatch.setenv("XETILE_ROTATE_LOADS", "off")
    kernel, consts, _, _ = KERNELS["readme16x32"]
    asm = xd.compile(kernel, SIG, consts, target="cpu-pvc").asm
    assert asm["simt"].count("xegpu.dpas ") == asm["xegpu"].count("xegpu.dpas ")


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc"])
def test_carry_mode_matches_numpy(target, monkeypatch):
    """``XETILE_ROTATE_LOADS=carry``: each tile loaded one trip ahead and carried (the
    last trip reads one step past K: zeros from the bounds-checked block loads)."""
    monkeypatch.setenv("XETILE_ROTATE_LOADS", "carry")
    kernel, consts, _, _ = KERNELS["m16"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asm = xd.compile(kernel, SIG, consts, target=target).asm
    assert "xetile.rotation_buffer" in asm["simt"]
    for k in KS["m16"]:
        c, ref = _run("m16", target, k)
        np.testing.assert_array_equal(c, ref, err_msg=f"carry on {target}, K = {k}")
