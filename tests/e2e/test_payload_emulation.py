"""Address payloads on the CPU device: the transposed reads and prefetches of a K loop go
through IGC's payload builtins on pvc (codegen/emit/transposed_payloads.py,
codegen/emit/prefetch_payloads.py), and the CPU device (PVC flavour) runs the same calls,
defined from the payload's fields (codegen/builtins/payload.py).  A wrong field (width,
height or pitch not minus one, a wrong block shape or position) gives wrong results here:
the shapes leave M, N and K partly outside the last tiles, so the surface edges matter."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.kernels.gemm_wg import gemm_wg_layout_kernel


#: 32x32 per subgroup: 16 DPAS per K step, a loop codegen orders for IGC on pvc
#: (codegen/latch_order.py: its prefetches go through moved payload copies)
#: (kernels/gemm_wg.py's A^T.B GEMM, [1, 2] subgroups, prefetched one K step ahead)
CONSTS = {"BM": 32, "BN": 64, "BK": 32, "SM": 1, "SN": 2, "PF": 1, "ACC": xt.float32, "TA": True, "TB": False}
#: M, N, K off the 32x64x32 tiles: the last M tile's second transposed message (16
#: columns of M) lies outside the width, K's last tile half outside the height
M, N, K = 48, 40, 80
DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


def _inputs(dtype: str):
    """A, B as small integers (exact in f16 and bf16) and the kernel's inputs A^T, B."""
    rng = np.random.default_rng(17)
    a = rng.integers(-8, 8, (M, K))
    b = rng.integers(-8, 8, (K, N))
    return a, b, np.ascontiguousarray(a.T).astype(DTYPES[dtype]), b.astype(DTYPES[dtype])


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_payload_builtins_run_on_the_cpu_device_and_are_exact(dtype):
    """On the PVC flavour the loop's transposed A reads and both prefetches go through
    payloads made before the loop (the prefetches through moved copies), emulated from
    their fields; C is exact (small integers: every product and sum is exact in f32)."""
    sig = {"a": f"{dtype}[:,:]", "b": f"{dtype}[:,:]", "c": "f32[:,:]", "K": "i32"}
    llvm = xd.compile(gemm_wg_layout_kernel, sig, CONSTS, target="cpu-pvc").asm["llvm"]
    defined = set(re.findall(r'^define [^@]*@"?(\w+)', llvm, re.M))
    assert {"__xetile_emulated_createBlock2DAddressPayload", "__builtin_IB_subgroup_setBlock2DAddressPayloadBlockY",
            "__builtin_IB_subgroup_block_read_ap_transpose_u32_m16k8v1"} <= defined
    assert any(name.startswith("__builtin_IB_subgroup_block_read_ap_prefetch_u16") for name in defined)
    assert {"__xetile_emulated_copyBlock2DAddressPayload",
            "__builtin_IB_subgroup_addBlock2DAddressPayloadBlockY"} <= defined
    assert not any(name.startswith("__xetile_load2d_read_transpose") for name in defined)  # every A read: payload
    a, b, at_in, b_in = _inputs(dtype)
    c = np.zeros((M, N), np.float32)
    gemm_wg_layout_kernel.on("cpu-pvc")[(M + 31) // 32, (N + 63) // 64](at_in, b_in, c, K, **CONSTS)
    np.testing.assert_array_equal(c, (a @ b).astype(np.float32))


def test_arc_flavour_keeps_plain_reads_and_is_exact():
    """The ARC flavour (no 2D block IO) makes no payload and gives the same C."""
    sig = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
    llvm = xd.compile(gemm_wg_layout_kernel, sig, CONSTS, target="cpu-arc").asm["llvm"]
    assert "Block2DAddressPayload" not in llvm
    a, b, at_in, b_in = _inputs("f16")
    c = np.zeros((M, N), np.float32)
    gemm_wg_layout_kernel.on("cpu-arc")[(M + 31) // 32, (N + 63) // 64](at_in, b_in, c, K, **CONSTS)
    np.testing.assert_array_equal(c, (a @ b).astype(np.float32))
