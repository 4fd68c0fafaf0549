"""sm90 attention's key loop in its SASS (decision 056) without a GPU: ops.attention's kernel
at D 128 causal (128 x 128 tiles, 2 warpgroups) compiled as a launch on [Z, H, N, D] arrays
would compile it, its PTX through ptxas sm_90a (pinned: the counts are deterministic) and
nvdisasm, the unmasked key loop's instructions counted by ``benchmarks/sass_loop.py``:

* K and V by TMA (the launch found the 4-D arrays describable): one 4-D bulk tensor copy a
  64-column block of a K or V tile, an mbarrier a tile of a stage of a key loop, the maps
  the last two parameters; the loop holds the floor of 16 HGMMA, 4 UTMALDG, one BAR, no
  MEMBAR and no LDGSTS (no cp.async address registers, no proxy fence);
* both fills: P's f32 -> f16 pairs as 32 F2FP (packed converts of two values), no F2F; no
  R2UR before the Q descriptors (built from a warp-uniform warpgroup index); the stage
  index's remainder in 32 bits (one multiply-high by 1/3 each, not a 64-bit sequence).

And the host's N-D tensor maps: which [Z, H, N, D] arrays a map describes, its fields."""
from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys

import pytest

import xetile_dsl.language as xt
from xetile_dsl import nv_launch
from xetile_dsl.compiler import parse_signature
from xetile_dsl.frontend.argspec import ArgSpec
from xetile_dsl.nv_compiler import compile_nv
from xetile_dsl.runtime import tensor_maps
from xetile_dsl.targets.nvidia import SM80, SM90

from .test_nvptx_compile import ptxas_report
from .test_nvptx_tma import _FakeCuda, _nvdisasm

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import sass_loop  # noqa: E402

attention = importlib.import_module("xetile_dsl.ops.attention")
SIG = {"q": "f16[:,:,:,:]", "k": "f16[:,:,:,:]", "v": "f16[:,:,:,:]", "o": "f16[:,:,:,:]", "lse": "f32[:,:,:]",
       "N": "i32", "H": "i32", "G": "i32", "qk_scale": "f32", "with_lse": "i32"}
BULK4 = re.compile(r"cp\.async\.bulk\.tensor\.4d\.shared::cluster\.global\.mbarrier::complete_tx::bytes")
D, BM, BN = 128, 128, 128


def _compile(tma: tuple):
    """(K and V by TMA only with the opt-in knob, XETILE_NV_TMA_ATTENTION=1; the tests set it)"""
    return compile_nv(attention.attention_rows_split_nd_kernel.fn, parse_signature(SIG),
                      dict(CAUSAL=True, OUT=xt.float16, D=D, BM=BM, BN=BN, LSE=False, SCALED=False), "sm90",
                      tma_arrays=tma)


def _key_loop(ptx: str, tmp_path) -> tuple[list[str], str]:
    report = ptxas_report(ptx, SM90.wgmma_ptx_arch, tmp_path)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "warning" not in report.lower(), report
    sass = subprocess.run([_nvdisasm(), str(tmp_path / "k.cubin")], capture_output=True, text=True,
                          check=True).stdout
    loop, _, _ = sass_loop.hot_loop(sass)
    return loop, report


def test_attention_key_loop_tma(tmp_path, monkeypatch):
    """K and V by TMA: their maps the last two 128-byte parameters, an mbarrier for K's and
    one for V's tile of each stage of each key loop, fills of D / 64 boxes armed with the
    tile's bytes, Q's copies the only cp.async (one group, one proxy fence before the
    loops).  SASS: the key loop holds 16 HGMMA, 4 UTMALDG, the two mbarrier waits, one
    BAR; no MEMBAR, FENCE or LDGSTS; P's 64 values a thread as 32 F2FP, no F2F.  Without
    the opt-in knob the same launch keeps the cp.async ring."""
    assert _compile(("q", "k", "v", "o")).tensor_maps == []
    monkeypatch.setenv("XETILE_NV_TMA_ATTENTION", "1")
    k = _compile(("q", "k", "v", "o"))
    assert k.tensor_maps == [("k", BN, 64), ("v", BN, 64)]
    ptx = k.ptx
    assert len(re.findall(r"\.param \.align 64 \.b8 attention_rows_split_nd_kernel_param_\d+\[128\]", ptx)) == 2
    stages = 3
    assert ptx.count("mbarrier.init.shared::cta.b64") == 2 * 2 * stages      # K's, V's; two key loops
    fills = BULK4.findall(ptx)
    assert fills and len(fills) % (D // 64) == 0                             # a tile's column blocks
    assert f"], {BN * D * 2};" in ptx and f"], {2 * BN * D * 2};" not in ptx  # a tile's bytes armed
    assert ptx.count("fence.proxy.async") == 1                               # Q's copies, once
    assert "cp.async.wait_group" in ptx and ptx.count("cp.async.commit_group") == 1   # Q only
    loop, _ = _key_loop(ptx, tmp_path)
    ops = [sass_loop._opcode(t) for t in loop]
    assert ops.count("HGMMA") == D // 16 + BN // 16 and ops.count("UTMALDG") == 2 * D // 64
    assert ops.count("BAR") == 1 and ops.count("SYNCS") >= 2             # K's wait, V's wait
    assert "MEMBAR" not in ops and "LDGSTS" not in ops and "FENCE" not in ops
    assert ops.count("F2FP") == 32 and "F2F" not in ops


def test_attention_key_loop_cp_async(tmp_path):
    """Arrays no map describes: the cp.async ring, its proxy fence a trip (MEMBAR), with the
    same packed converts, no R2UR and the 32-bit stage remainder."""
    k = _compile(())
    assert k.tensor_maps == [] and not BULK4.search(k.ptx) and "mbarrier" not in k.ptx
    loop, _ = _key_loop(k.ptx, tmp_path)
    ops = [sass_loop._opcode(t) for t in loop]
    assert ops.count("HGMMA") == D // 16 + BN // 16 and ops.count("MEMBAR") == 1 and "LDGSTS" in ops
    assert ops.count("F2FP") == 32 and "F2F" not in ops
    assert "R2UR" not in ops
    # the read and the write stage, (trip [+ 1]) mod 3 in 32 bits: one multiply by 0xaaaaaaab each
    assert sum("0x5555555" in t or "0xaaaaaab" in t for t in loop) <= 2


@pytest.mark.parametrize("shape,strides,ok", [
    ((4, 32, 4096, 128), None, True),                                # contiguous [Z, H, N, D]
    ((2, 8, 1000, 64), None, True),                                  # ragged N: TMA zero-fills past it
    ((2, 1000, 8, 64), (2 * 1000 * 8 * 64, 2 * 8 * 64, 2 * 64, 2), True),
    ((2, 8, 1000, 64), (2 * 1000 * 8 * 64, 2 * 64, 2 * 8 * 64, 2), False),   # x.transpose(1, 2): H inside N
    ((2, 8, 1000, 60), None, False),                                 # 120-byte rows
])
def test_nd_describable(shape, strides, ok):
    """Rank 3 to 5 arrays: 16-byte multiples for the base and every outer stride, the
    leading dimensions nested outermost first (a head-interleaved view is left to cp.async)."""
    if strides is None:
        strides, step = [], 2
        for n in reversed(shape):
            strides.insert(0, step)
            step *= n
    assert tensor_maps.describable(0x7f00_0000_0000, shape, tuple(strides), 2, SM90) is ok
    assert tensor_maps.describable(0x7f00_0000_0000, shape, tuple(strides), 2, SM80) is False


def test_nd_map_fields_and_launch():
    """A [Z, H, N, D] map: extents and strides innermost first, the box BN keys x 64 columns
    of one head; the launch names the 4-D f16 arrays, not the f32 lse."""
    Z, H, N, Dh = 4, 32, 4096, 128
    f = tensor_maps.map_fields(0x10000, (Z, H, N, Dh), (H * N * Dh * 2, N * Dh * 2, Dh * 2), 2, (128, 64), SM90)
    assert (f.dims, f.strides, f.box, f.element_strides) == \
        ((Dh, N, H, Z), (Dh * 2, N * Dh * 2, H * N * Dh * 2), (64, 128, 1, 1), (1, 1, 1, 1))
    runtime = [(n, _FakeCuda(0x10000 * (i + 1), (Z, H, N, Dh))) for i, n in enumerate("qkvo")]
    runtime.append(("lse", _FakeCuda(0x90000, (1, 1, 1), "<f4")))
    specs = {n: ArgSpec("array", "f16", 4) for n in "qkvo"}
    specs["lse"] = ArgSpec("array", "f32", 3)
    assert nv_launch.tma_arrays(SM90, runtime, specs) == ("q", "k", "v", "o")
