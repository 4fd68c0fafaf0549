"""The sm90 GEMM's TMA fill (decision 051) without a GPU: the PTX of the 128x256x64 ops
tile with both arrays describable by tensor maps (tensor-map parameters read in place,
mbarriers, one ``cp.async.bulk.tensor`` a 64-column block of A and B a fill, no
``fence.proxy.async``, no ``cp.async``), ptxas sm_90a (no spill, fewer registers than the
cp.async ring's 204) and its SASS by nvdisasm (the K loop: 4 ``HGMMA``, 5 ``UTMALDG``, an
mbarrier wait and one barrier, no memory barrier); the host's tensor-map fields and which
arrays the launch hands to TMA.  Results on a GPU: benchmarks/vs_cuda.py."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

import sys

import xetile_dsl.language as xt
from xetile_dsl import knobs, nv_launch
from xetile_dsl.codegen.nvptx.wgmma_gemm import stage_bytes
from xetile_dsl.compiler import parse_signature
from xetile_dsl.errors import LaunchError
from xetile_dsl.frontend.argspec import ArgSpec
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.nv_compiler import compile_nv
from xetile_dsl.ops.matmul import ACTIVATIONS, matmul_kernel as ops_kernel
from xetile_dsl.runtime import tensor_maps
from xetile_dsl.targets.nvidia import SM80, SM90

from .test_nvptx_compile import GEMM_SIG, ptxas_report

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import sass_loop  # noqa: E402

#: the cp.async ring's registers at this tile (decision 044); TMA needs no copy addresses
CP_ASYNC_REGISTERS = 204
BULK = re.compile(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier::complete_tx::bytes")


def _nvdisasm() -> str:
    """nvdisasm on PATH or from the ``nvidia-cuda-nvdisasm`` wheel (the ``[test]`` extra)."""
    from xetile_dsl.tools.sass import find_nvdisasm
    found = find_nvdisasm()
    if found:
        return found
    if knobs.REQUIRE_PTXAS.get():
        pytest.fail("XETILE_REQUIRE_PTXAS=1 but no nvdisasm (the nvidia-cuda-nvdisasm wheel)", pytrace=False)
    pytest.skip("nvdisasm unavailable (CUDA toolkit or the nvidia-cuda-nvdisasm wheel)")


def test_tma_gemm_ptx_and_sass(tmp_path):
    """128x256x64, f16, 2 warpgroups, both arrays TMA's: two 128-byte grid_constant map
    parameters after the others; two mbarriers a stage (full, empty: 16 bytes after the
    ring); each fill (S - 1 before the loop, one a trip) is 1 + 4 bulk tensor copies (A:
    one 64 x 128 box, B: four 64 x 64) armed with the stage's 49152 bytes; the loop's one
    plain arrival a thread on the empty barrier of trip i - 1's stage; no proxy fence, no
    cp.async.  ptxas: no spill, under the cp.async ring's registers.  SASS: the K loop
    holds the floor of 4 HGMMA, 5 UTMALDG, the mbarrier waits and arrivals and no
    BAR (the empty barriers order the refills), MEMBAR or FENCE."""
    bm, bn, bk = 128, 256, 64
    k = compile_nv(matmul_kernel.fn, parse_signature(GEMM_SIG), {"BM": bm, "BN": bn, "BK": bk}, "sm90",
                   tma_arrays=("a", "b", "c"))
    assert k.tensor_maps == [("a", bm, 64), ("b", bk, 64)] and k.threads == 256   # f32 C: no TMA store
    stages = (k.smem_bytes - 1024) // (stage_bytes(bm, bn, bk) + 16)
    assert k.smem_bytes == stages * (stage_bytes(bm, bn, bk) + 16) + 1024 and stages == 4
    ptx = k.ptx
    assert len(re.findall(r"\.param \.align 64 \.b8 matmul_kernel_param_\d+\[128\]", ptx)) == 2
    assert ptx.count("cvta.param.u64") == 2 and ptx.count("prefetch.tensormap") == 2
    assert ptx.count("mbarrier.init.shared::cta.b64") == 2 * stages
    assert ptx.count(f"], {k.threads};") == stages          # the empty barriers: one arrival a thread
    fills = stages
    assert len(BULK.findall(ptx)) == (bk // 64 + bn // 64) * fills
    assert ptx.count("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r") == fills
    assert ptx.count("mbarrier.arrive.shared::cta.b64 _, [%r") == 1
    assert f"], {stage_bytes(bm, bn, bk)};" in ptx
    assert "fence.proxy.async" not in ptx and "cp.async.cg" not in ptx and "cp.async.wait_group" not in ptx
    assert len(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.f16\.f16", ptx)) == bk // 16
    report = ptxas_report(ptx, SM90.wgmma_ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "serialized" not in report, report
    assert int(re.search(r"Used (\d+) registers", report).group(1)) < CP_ASYNC_REGISTERS - 32
    sass = subprocess.run([_nvdisasm(), str(tmp_path / "k.cubin")], capture_output=True, text=True,
                          check=True).stdout
    loop, _, _ = sass_loop.hot_loop(sass)
    ops = [sass_loop._opcode(t) for t in loop]
    assert ops.count("HGMMA") == bk // 16 and ops.count("UTMALDG") == bk // 64 + bn // 64
    assert "BAR" not in ops and "SYNCS" in ops
    assert "MEMBAR" not in ops and "FENCE" not in ops and "LDGSTS" not in ops


def test_tma_store_of_16_bit_c(tmp_path):
    """ops.matmul's kernel with a 16-bit C whose array a tensor map describes: a third map
    (C, boxes 64 x BM), C's pairs stored to the ring's memory (64 ``st.shared.b32`` a thread
    at 128x256, in A's swizzle), the async proxy fenced, BN / 64 bulk tensor stores by one
    thread and a wait for their reads; the SASS holds no global store.  Where C's array is
    not describable, the registers' own stores remain."""
    sig = parse_signature({"a": "f16[:,:]", "b": "f16[:,:]", "bias": "f32[:,:]", "c": "f16[:,:]", "K": "i32"})
    consts = {"TA": False, "TB": False, "HAS_BIAS": False, "ACT": 0, "ACC": xt.float32, "OUT": xt.float16,
              "BM": 128, "BN": 256, "BK": 64}
    k = compile_nv(ops_kernel.fn, sig, consts, "sm90", tma_arrays=("a", "b", "c"))
    assert k.tensor_maps == [("a", 128, 64), ("b", 64, 64), ("c", 128, 64)]
    ptx = k.ptx
    assert ptx.count("st.shared.b32") == 128 * 256 // 2 // k.threads
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 256 // 64
    assert ptx.count("fence.proxy.async.shared::cta") == 1 and "cp.async.bulk.wait_group.read 0" in ptx
    report = ptxas_report(ptx, SM90.wgmma_ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report
    sass = subprocess.run([_nvdisasm(), str(tmp_path / "k.cubin")], capture_output=True, text=True,
                          check=True).stdout
    assert "UTMASTG" in sass and not re.search(r"\bSTG\.", sass)
    plain = compile_nv(ops_kernel.fn, sig, consts, "sm90", tma_arrays=("a", "b"))
    assert len(plain.tensor_maps) == 2 and "bulk_group" not in plain.ptx and "st.global" in plain.ptx


def test_tma_epilogue_tile_and_fallback(tmp_path):
    """ops.matmul's epilogue tile (128x128x64, bias row and tanh gelu, 8 warps) takes TMA
    (its C stored by TMA too) with no spill; the same kernel where the launch found only A describable keeps the
    cp.async ring (its proxy fence, no tensor map)."""
    sig = parse_signature({"a": "f16[:,:]", "b": "f16[:,:]", "bias": "f32[:,:]", "c": "f16[:,:]", "K": "i32"})
    consts = {"TA": False, "TB": False, "HAS_BIAS": True, "ACT": ACTIVATIONS["gelu_tanh"], "ACC": xt.float32,
              "OUT": xt.float16, "BM": 128, "BN": 128, "BK": 64}
    k = compile_nv(ops_kernel.fn, sig, consts, "sm90", num_warps=8, tma_arrays=("a", "b", "bias", "c"))
    assert k.tensor_maps == [("a", 128, 64), ("b", 64, 64), ("c", 128, 64)]
    assert len(BULK.findall(k.ptx)) == 3 * 4 and k.ptx.count("fence.proxy.async") == 1   # C's
    report = ptxas_report(k.ptx, SM90.wgmma_ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report
    fallback = compile_nv(ops_kernel.fn, sig, consts, "sm90", num_warps=8, tma_arrays=("a",))
    assert fallback.tensor_maps == [] and "fence.proxy.async" in fallback.ptx and not BULK.search(fallback.ptx)


def test_tensor_map_fields():
    """The fields of cuTensorMapEncodeTiled for a row-major 2-D array, innermost first
    (columns, rows), the row stride in bytes, the box (columns, rows); the limits
    (NvTarget.tma_*) refuse a box over 256 or wider than the 128-byte swizzle."""
    f = tensor_maps.map_fields(0x10000, (333, 264), 528, 2, (128, 64), SM90)
    assert (f.address, f.dims, f.strides, f.box, f.element_strides, f.swizzle) == \
        (0x10000, (264, 333), (528,), (64, 128), (1, 1), 128)
    with pytest.raises(LaunchError, match="1 to 256"):
        tensor_maps.map_fields(0, (1000, 1000), 2000, 2, (512, 64), SM90)
    with pytest.raises(LaunchError, match="128 bytes a row"):
        tensor_maps.map_fields(0, (1000, 1000), 2000, 2, (128, 128), SM90)


@pytest.mark.parametrize("address,shape,strides,elem,ok", [
    (0x7f00_0000_0000, (1000, 1000), (2000, 2), 2, True),     # 1000 x 1000 f16: 2000-byte rows
    (0x7f00_0000_0000, (257, 300), (600, 2), 2, False),       # 600-byte rows: not 16-byte multiples
    (0x7f00_0000_0008, (64, 64), (128, 2), 2, False),         # base 8 bytes off
    (0x7f00_0000_0000, (64, 64), (256, 4), 4, False),         # f32: not a GEMM operand here
    (0x7f00_0000_0000, (64, 64), (2, 128), 2, False),         # column-major
    (0x7f00_0000_0000, (0, 64), (128, 2), 2, False),          # empty
])
def test_describable(address, shape, strides, elem, ok):
    assert tensor_maps.describable(address, shape, strides, elem, SM90) is ok
    assert tensor_maps.describable(address, shape, strides, elem, SM80) is False


class _FakeCuda:
    """An object with a ``__cuda_array_interface__`` (no GPU needed)."""

    def __init__(self, address, shape, typestr="<f2", strides=None):
        self.__cuda_array_interface__ = {"data": (address, False), "shape": shape, "typestr": typestr,
                                         "strides": strides, "version": 3}


def test_launch_picks_tma_arrays(monkeypatch):
    """The launch names the 16-bit 2-D arrays a map can describe (an f32 C, an unaligned
    array and a scalar are left out); none on sm80 or with XETILE_NV_TMA=0."""
    runtime = [("a", _FakeCuda(0x1000, (1000, 1000))), ("b", _FakeCuda(0x2008, (1000, 1000))),
               ("c", _FakeCuda(0x3000, (1000, 1000), "<f4")), ("K", 1000)]
    specs = {"a": ArgSpec("array", "f16", 2), "b": ArgSpec("array", "f16", 2), "c": ArgSpec("array", "f32", 2),
             "K": ArgSpec("scalar", "i32")}
    assert nv_launch.tma_arrays(SM90, runtime, specs) == ("a",)
    assert nv_launch.tma_arrays(SM80, runtime, specs) == ()
    monkeypatch.setenv("XETILE_NV_TMA", "0")
    assert nv_launch.tma_arrays(SM90, runtime, specs) == ()


class _FakeGradTensor:
    """Like a torch CUDA tensor that requires grad: its interface is refused (RuntimeError,
    as torch raises), its ``detach()`` gives it."""

    def __init__(self, address, shape):
        self._inner = _FakeCuda(address, shape)

    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad")

    def detach(self):
        return self._inner


def test_launch_reads_arrays_that_require_grad():
    """An autograd input (requires grad) is described through its detach(): the TMA choice
    and the map's layout read the same memory, rather than failing on torch's refusal."""
    runtime = [("a", _FakeGradTensor(0x1000, (1000, 1000)))]
    specs = {"a": ArgSpec("array", "f16", 2)}
    assert nv_launch.tma_arrays(SM90, runtime, specs) == ("a",)


def test_grouped_program_order_covers_c_once():
    """ops.matmul's grouped order (sm90: OpTiles.gemm_group_m = 8) in the interpreter, at
    GM = 2 over a 5 x 5 grid (the last group one row block): every tile of C written once
    (C poisoned with NaN) and right.  Bound: f16 products are exact in f32, each of the K
    additions rounds by at most 2^-24 of the running |sum| <= (|A| |B|)_ij."""
    import numpy as np
    from xetile_dsl.ops import configs
    from xetile_dsl.ops.matmul import matmul_grouped_kernel
    assert configs.gemm_group("sm90") == {"GM": 8} and configs.gemm_group("pvc") == {}
    rng = np.random.default_rng(7)
    M, N, K = 40, 80, 32
    a, b = (rng.standard_normal(s).astype(np.float16) for s in ((M, K), (K, N)))
    c = np.full((M, N), np.nan, np.float32)
    matmul_grouped_kernel.on("interpret")[(5, 5)](a, b, np.zeros((1, N), np.float32), c, K, TA=False, TB=False,
                                                  HAS_BIAS=False, ACT=0, ACC=xt.float32, OUT=xt.float32, BM=8,
                                                  BN=16, BK=16, GM=2)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert np.all(np.abs(c - a64 @ b64) <= K * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64)))


class _FakeTensor:
    """What the launch's token reads of a torch CUDA tensor."""

    is_cuda = True

    def __init__(self, address, shape, dtype="float16"):
        self.address, self.shape, self.dtype = address, shape, dtype

    def data_ptr(self):
        return self.address

    def stride(self):
        return (self.shape[1], 1)


def test_launch_token(monkeypatch):
    """The previous launch is re-sent only for the same grid, target, TMA knob, tensors
    (address, shape, strides, dtype), scalars and keywords; a callable grid or another
    kind of argument always takes the full path."""
    a, b = _FakeTensor(0x1000, (64, 64)), _FakeTensor(0x2000, (64, 64))
    token = nv_launch._token((2, 1), None, (a, b, 64), {"BM": 64})
    assert token == nv_launch._token((2, 1), None, (_FakeTensor(0x1000, (64, 64)), b, 64), {"BM": 64})
    for other in (nv_launch._token((2, 1), None, (_FakeTensor(0x3000, (64, 64)), b, 64), {"BM": 64}),
                  nv_launch._token((2, 1), None, (_FakeTensor(0x1000, (64, 32)), b, 64), {"BM": 64}),
                  nv_launch._token((2, 1), None, (a, b, 65), {"BM": 64}),
                  nv_launch._token((2, 1), None, (a, b, 64.0), {"BM": 64}),
                  nv_launch._token((2, 1), None, (a, b, 64), {"BM": 32}),
                  nv_launch._token((2, 1), None, (a, b, 64), {"BM": 64.0}),
                  nv_launch._token((2, 1), None, (a, b, True), {"BM": 64}),
                  nv_launch._token((1, 1), "sm80", (a, b, 64), {"BM": 64})):
        assert other is not None and other != token
    two = nv_launch._token((2, 1), None, (a, b, 64), {"BM": 64, "BN": 32})
    assert two != nv_launch._token((2, 1), None, (a, b, 64), {"BN": 32, "BM": 64}) is not None  # (the full path once)
    assert nv_launch._token(lambda meta: (1,), None, (a, b, 64), {}) is None
    assert nv_launch._token((1,), None, (a, [1, 2]), {}) is None
    monkeypatch.setenv("XETILE_NV_TMA", "0")
    assert nv_launch._token((2, 1), None, (a, b, 64), {"BM": 64}) != token
