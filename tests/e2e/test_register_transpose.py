"""tile_transpose of computed values in registers (lane shuffles, lowering/rewrites/register_transpose.py)
on the OpenCL CPU device (PVC 16 lanes, ARC 8 lanes) and the interpreter, against numpy;
each test also checks from the SIMT text which path the compiler took (``xegpu.lane_transpose``
and no SLM buffer, or the SLM round trip where registers do not fit)."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
from kernels.computed_transposes import (matmul_at_computed_kernel, transpose_accumulate_kernel,
                                                   workgroup_transpose_across_subgroups_kernel,
                                                   workgroup_transpose_computed_kernel)
from kernels.subgroup_transposes import matmul_bt_computed_kernel, transpose_computed_kernel

DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32}
PITCH = 64  # array rows of at least 64 elements: 2D block messages need 64-byte rows
#: [M, N] sources per flavour: one square, a column and a row of squares, a grid of them
SHAPES = {"pvc": [(16, 16), (32, 16), (16, 32), (32, 32)], "arc": [(8, 8), (16, 8), (8, 32), (32, 16), (16, 16)]}


def _path(kernel, signature, constants, flavour) -> str:
    """"registers" or "slm", from the SIMT text of the kernel compiled for ``flavour``."""
    simt = xd.compile(kernel, signature, constants, target=f"cpu-{flavour}").asm["simt"]
    registers, slm = "xegpu.lane_transpose" in simt, "memref.alloc" in simt
    assert registers != slm, "expected exactly one of the register and SLM transposes"
    return "registers" if registers else "slm"


def _computed(device, x, M, N, groups):
    y = np.zeros((N, max(groups * M, PITCH)), x.dtype)
    transpose_computed_kernel.on(device)[(groups,)](x, y, M=M, N=N)
    return y[:, :groups * M]


def _expected(x, M, N, groups):
    return np.concatenate([(x[p * M:(p + 1) * M, :N] * 2 + 1).T for p in range(groups)], axis=1)


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
@pytest.mark.parametrize("dtype", ["f32", "i32", "f16"])
def test_computed_transpose_in_registers_matches_numpy(flavour, dtype):
    groups = 2  # two workgroups, each transposing its own rows
    for M, N in SHAPES[flavour]:
        sig = {"x": f"{dtype}[:,:]", "y": f"{dtype}[:,:]"}
        assert _path(transpose_computed_kernel, sig, {"M": M, "N": N}, flavour) == "registers", f"{M}x{N}"
        x = np.random.default_rng(M * N).integers(-40, 40, (groups * M, PITCH)).astype(DTYPES[dtype])
        np.testing.assert_array_equal(_computed(f"cpu-{flavour}", x, M, N, groups), _expected(x, M, N, groups),
                                      err_msg=f"{M}x{N}")


def test_interpreter_agrees_with_numpy_and_the_device():
    x = np.random.default_rng(3).integers(-40, 40, (64, PITCH)).astype(np.float32)
    interp = _computed("interpret", x, 32, 32, 2)
    np.testing.assert_array_equal(interp, _expected(x, 32, 32, 2))
    np.testing.assert_array_equal(_computed("cpu-pvc", x, 32, 32, 2), interp)


@pytest.mark.parametrize("device,M,N", [("cpu-pvc", 32, 32), ("cpu-pvc", 16, 48), ("cpu-arc", 16, 32),
                                        ("interpret", 32, 32)])
def test_transpose_inside_a_loop(device, M, N):
    """acc += (2 x_k + 1)^T for 3 row blocks x_k: a register transpose per iteration."""
    if device != "interpret":
        flavour = device.split("-")[1]
        sig = {"x": "f32[:,:]", "y": "f32[:,:]", "STEPS": "i32"}
        assert _path(transpose_accumulate_kernel, sig, {"M": M, "N": N}, flavour) == "registers"
    steps = 3
    x = np.random.default_rng(M + N).integers(-20, 20, (steps * M, PITCH)).astype(np.float32)
    y = np.zeros((N, PITCH), np.float32)
    transpose_accumulate_kernel.on(device)[(1,)](x, y, steps, M=M, N=N)
    ref = sum((x[k * M:(k + 1) * M, :N] * 2 + 1).T for k in range(steps))
    np.testing.assert_array_equal(y[:, :M], ref)


@pytest.mark.parametrize("flavour,dtype", [("pvc", "f16"), ("pvc", "f32"), ("arc", "f16")])
def test_computed_transpose_as_tile_mma_b_operand(flavour, dtype):
    """C = A @ (2 BT + 1)^T: the transposed square blocks are DPAS B blocks (VNNI for f16)."""
    M, N, K = 64, 64, 96
    tiles = (32, 32, 32) if flavour == "pvc" else (16, 16, 32)
    sig = {"a": f"{dtype}[:,:]", "bt": f"{dtype}[:,:]", "c": "f32[:,:]", "K": "i32"}
    assert _path(matmul_bt_computed_kernel, sig, dict(zip(("BM", "BN", "BK"), tiles)), flavour) == "registers"
    rng = np.random.default_rng(21)
    a = rng.integers(-3, 4, (M, K)).astype(DTYPES[dtype])
    bt = rng.integers(-3, 4, (N, K)).astype(DTYPES[dtype])
    c = np.zeros((M, N), np.float32)
    matmul_bt_computed_kernel.on(f"cpu-{flavour}")[(M // tiles[0], N // tiles[1])](
        a, bt, c, K, BM=tiles[0], BN=tiles[1], BK=tiles[2])
    np.testing.assert_array_equal(c, a.astype(np.float64) @ (bt.T.astype(np.float64) * 2 + 1))


@pytest.mark.parametrize("device", ["cpu-pvc", "cpu-arc", "interpret", "interpret-subgroups"])
def test_workgroup_transpose_of_own_pieces_in_registers(device):
    if device.startswith("cpu"):
        sig = {"x": "f32[:,:]", "y": "f32[:,:]"}
        assert _path(workgroup_transpose_computed_kernel, sig, {}, device.split("-")[1]) == "registers"
    x = np.random.default_rng(4).integers(-40, 40, (32, PITCH)).astype(np.float32)
    y = np.zeros((32, PITCH), np.float32)
    workgroup_transpose_computed_kernel.on(device)[(1,)](x, y)
    np.testing.assert_array_equal(y[:, :32], (x[:, :32] * 2 + 1).T)


# --- where registers do not fit: the SLM path, still correct ---------------------------------
@pytest.mark.parametrize("flavour", ["pvc", "arc"])
def test_operand_a_transpose_goes_through_slm(flavour):
    """C = (2 AT + 1)^T @ B: operand A's lane layout is not one column per lane."""
    tiles = (32, 32, 32) if flavour == "pvc" else (16, 16, 32)
    sig = {"at": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
    assert _path(matmul_at_computed_kernel, sig, dict(zip(("BM", "BN", "BK"), tiles)), flavour) == "slm"
    rng = np.random.default_rng(22)
    at = rng.integers(-3, 4, (64, 64)).astype(np.float16)
    b = rng.integers(-3, 4, (64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    matmul_at_computed_kernel.on(f"cpu-{flavour}")[(64 // tiles[0], 64 // tiles[1])](
        at, b, c, 64, BM=tiles[0], BN=tiles[1], BK=tiles[2])
    np.testing.assert_array_equal(c, (at.astype(np.float64) * 2 + 1).T @ b.astype(np.float64))


@pytest.mark.parametrize("flavour,M,N", [("pvc", 32, 64), ("arc", 32, 32)])
def test_a_value_larger_than_half_the_register_file_goes_through_slm(flavour, M, N):
    """32x64 f32 on PVC (8 KB, where 32x32 still transposes in registers; 64x64 took the
    OpenCL CPU compiler 60 s for the same path), 32x32 on ARC."""
    sig = {"x": "f32[:,:]", "y": "f32[:,:]"}
    assert _path(transpose_computed_kernel, sig, {"M": M, "N": N}, flavour) == "slm"
    x = np.random.default_rng(5).integers(-40, 40, (2 * M, max(N, PITCH))).astype(np.float32)
    np.testing.assert_array_equal(_computed(f"cpu-{flavour}", x, M, N, 2), _expected(x, M, N, 2))


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
def test_workgroup_transpose_across_subgroups_goes_through_slm(flavour):
    assert _path(workgroup_transpose_across_subgroups_kernel, {"x": "f32[:,:]", "y": "f32[:,:]"}, {},
                 flavour) == "slm"
    x = np.random.default_rng(6).integers(-40, 40, (32, PITCH)).astype(np.float32)
    y = np.zeros((32, PITCH), np.float32)
    workgroup_transpose_across_subgroups_kernel.on(f"cpu-{flavour}")[(1,)](x, y)
    np.testing.assert_array_equal(y[:, :32], (x[:, :32] * 2 + 1).T)


@pytest.mark.parametrize("mode", ["interpret", "interpret-subgroups"])
def test_workgroup_transpose_across_subgroups_in_the_interpreter(mode):
    """Per subgroup, the SLM exchange reads back through a column-major
    ``memref.reinterpret_cast`` view (the interpreter lacked that op)."""
    x = np.random.default_rng(6).integers(-40, 40, (32, PITCH)).astype(np.float32)
    y = np.zeros((32, PITCH), np.float32)
    workgroup_transpose_across_subgroups_kernel.on(mode)[(1,)](x, y)
    np.testing.assert_array_equal(y[:, :32], (x[:, :32] * 2 + 1).T)


@pytest.mark.parametrize("device", ["cpu-pvc", "cpu-arc", "interpret-subgroups"])
def test_workgroup_8bit_transpose_across_subgroups(device):
    """int8 through the workgroup SLM exchange, widened to 16 bits there.
    2 * x + 1 for x in [-40, 40) stays within int8: numpy's int8 result is exact."""
    x = np.random.default_rng(7).integers(-40, 40, (32, PITCH)).astype(np.int8)
    y = np.zeros((32, PITCH), np.int8)
    workgroup_transpose_across_subgroups_kernel.on(device)[(1,)](x, y)
    np.testing.assert_array_equal(y[:, :32], (x[:, :32] * 2 + 1).T)
