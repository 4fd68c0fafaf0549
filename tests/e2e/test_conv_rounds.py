"""tile_conv_layout of workgroup tiles larger than the SLM left for them, staged in rounds
of row chunks (lowering/passes/wg_to_sg/conv_rounds.py), run on the OpenCL CPU device (both flavours)
and in the interpreter (whole tiles and per subgroup, which runs the distributed program)
against numpy."""
from __future__ import annotations

import re

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError
from xetile_dsl.kernels import workgroup_slm as W

FLAVOURS = ["cpu-pvc", "cpu-arc"]
F32_IO = {"a": "f32[:,:]", "c": "f32[:,:]"}


def _input(rows: int, cols: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, cols)).astype(np.float32)


@pytest.mark.parametrize("target", FLAVOURS + ["interpret", "interpret-subgroups"])
def test_1mib_conversion_in_rounds(target):
    """512x512 f32 tiles (1 MiB each, two workgroups) from [8, 4] x [16, 128] (4 row pieces
    per subgroup, round-robin) to [32, 1] x [16, 512]: 8 rounds of 64 rows on PVC, 16 rounds
    of 32 rows on ARC; every element lands where it was."""
    a = _input(1024, 512, 1)
    c = np.full_like(a, np.nan)
    W.conv_rounds_kernel.on(target)[(2,)](a, c)
    np.testing.assert_array_equal(c, a * 2 + 1)


def test_interpreter_per_subgroup_with_arc_chunks(monkeypatch):
    """The interpreter distributes for ARC (XETILE_CPU_FLAVOUR=arc): 16 rounds of 32 rows."""
    monkeypatch.setenv("XETILE_CPU_FLAVOUR", "arc")
    a = _input(512, 512, 2)
    c = np.full_like(a, np.nan)
    W.conv_rounds_kernel.on("interpret-subgroups")[(1,)](a, c)
    np.testing.assert_array_equal(c, a * 2 + 1)


@pytest.mark.parametrize("target,tm,rows", [("cpu-pvc", 128, 192), ("cpu-arc", 64, 96),
                                            ("interpret-subgroups", 128, 192)])
def test_rounds_fit_next_to_the_kernels_own_slm(target, tm, rows):
    """The kernel's xt.slm_alloc buffer takes 96 KiB (PVC) / 48 KiB (ARC); the 64 / 32 KiB
    conversion then runs in 2 rounds in the 32 / 16 KiB left."""
    if target.startswith("cpu"):  # the kernel's buffer and a chunk of half the tile
        kernel = xd.compile(W.conv_rounds_after_slm_kernel, F32_IO, {"TM": tm, "ROWS": rows}, target=target)
        allocs = re.findall(r"memref.alloc\(\) : memref<(\d+)x128xf32, 3 : i64>", kernel.asm["xegpu"])
        assert allocs == [str(rows), str(tm // 2)]
    a = _input(2 * tm, 128, 3)
    c = np.full_like(a, np.nan)
    W.conv_rounds_after_slm_kernel.on(target)[(2,)](a, c, TM=tm, ROWS=rows)
    np.testing.assert_array_equal(c, a * 2 + 1)


@pytest.mark.parametrize("target", FLAVOURS)
def test_rounds_inside_a_loop(target):
    """Three iterations reuse the chunk buffer: the last round's barrier orders each
    iteration's reads before the next iteration's stores."""
    a = _input(1536, 512, 4)
    c = np.full_like(a, np.nan)
    W.conv_rounds_loop_kernel.on(target)[(1,)](a, c, STEPS=3)
    np.testing.assert_array_equal(c, a * 2 + 1)


def test_rfc_size_conversion_runs_in_two_rounds_on_arc():
    """256x128 f32 (128 KiB) fits PVC whole; on ARC (64 KiB) it now runs in 2 rounds."""
    a = _input(256, 128, 5)
    c = np.full_like(a, np.nan)
    W.big_conv_kernel.on("cpu-arc")[(1,)](a, c)
    np.testing.assert_array_equal(c, a)


def test_no_chunk_fits_is_reported_at_the_users_line():
    """ARC with a 62 KiB buffer of the kernel's own: 2 KiB are left, one 8-row chunk of the
    64x128 f32 conversion (pieces of 8 and 2 rows) needs 4 KiB. 120 rows leave 4 KiB: it
    compiles (8 rounds)."""
    kernel = xd.compile(W.conv_rounds_after_slm_kernel, F32_IO, {"TM": 64, "ROWS": 120}, target="cpu-arc")
    assert "memref.alloc() : memref<8x128xf32, 3 : i64>" in kernel.asm["xegpu"]
    with pytest.raises(CompilationError) as info:
        xd.compile(W.conv_rounds_after_slm_kernel, F32_IO, {"TM": 64, "ROWS": 124}, target="cpu-arc")
    text = str(info.value)
    assert "in rounds of row chunks" in text and "a multiple of 8 rows (4096 B)" in text
    assert "arc has 65536 B per workgroup and 2048 B are left" in text
    assert "xt.tile_conv_layout(" in text and "workgroup_slm.py" in text


@xd.jit
def conv_maps(a, c, H: xt.constexpr, W: xt.constexpr, SRC: xt.constexpr, DST: xt.constexpr):
    """c = a through tile_conv_layout from map SRC to map DST ((sg_layout, sg_data) pairs)."""
    src = xt.wg_map(sg_layout=SRC[0], sg_data=SRC[1])
    dst = xt.wg_map(sg_layout=DST[0], sg_data=DST[1])
    v = xt.load_tile(xt.init_tile(a, [0, 0], [H, W], wg_map=src))
    xt.store_tile(xt.tile_conv_layout(v, dst), xt.init_tile(c, [0, 0], [H, W], wg_map=dst))


@pytest.mark.parametrize("target,dtype,hw,src,dst,chunk", [
    # f16, 512 KiB, the result in 8 column pieces: 4 rounds of 128 rows on PVC
    ("cpu-pvc", "f16", (512, 512), ([8, 4], [32, 128]), ([4, 8], [128, 64]), 128),
    # the source wraps around (16 x 64 rows > 512: subgroups share pieces): 8 rounds of 64
    ("cpu-pvc", "f32", (512, 512), ([16, 2], [64, 256]), ([32, 1], [16, 512]), 64),
    # i32 on ARC (256 KiB, 64 KiB of SLM): 4 rounds of 64 rows
    ("cpu-arc", "i32", (256, 256), ([4, 8], [64, 32]), ([32, 1], [8, 256]), 64),
    ("interpret-subgroups", "f16", (512, 512), ([8, 4], [32, 128]), ([4, 8], [128, 64]), None),
])
def test_rounds_with_other_maps_and_types(target, dtype, hw, src, dst, chunk):
    np_type = {"f16": np.float16, "f32": np.float32, "i32": np.int32}[dtype]
    a = (np.arange(hw[0] * hw[1]) % 1000).reshape(hw).astype(np_type)
    c = np.zeros_like(a)
    consts = {"H": hw[0], "W": hw[1], "SRC": src, "DST": dst}
    if chunk is not None:
        text = xd.compile(conv_maps, {"a": f"{dtype}[:,:]", "c": f"{dtype}[:,:]"}, consts, target=target).asm["xegpu"]
        assert re.findall(r"memref.alloc\(\) : memref<(\d+)x", text) == [str(chunk)]
    conv_maps.on(target)[(1,)](a, c, **consts)
    np.testing.assert_array_equal(c, a)
