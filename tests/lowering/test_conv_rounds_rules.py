"""xetile-wg-to-sg: a tile_conv_layout larger than the SLM left for it is staged in rounds
of row chunks (lowering/passes/wg_to_sg/conv_rounds.py): one chunk-sized buffer, an scf.for over the
chunks, per piece an scf.if on "its first row lies in this chunk", two barriers a round."""
from __future__ import annotations

import re

import pytest

from tests.lowering.test_lowering_rules import opt, tile, wg
from tests.lowering.test_wg_slm_rules import _kernel
from xetile_dsl.lowering.passes.wg_to_sg.conv_rounds import chunk_rows

SRC, DST = wg((8, 4), (16, 128)), wg((32, 1), (16, 512))
BIG_CONV = (f"  %r = xetile.tile_conv_layout %v {{wg_map = {DST}}} : vector<512x512xf32> -> vector<512x512xf32>",
            tile((512, 512), "f32", SRC))


def _loop_bounds(out: str) -> tuple[int, int]:
    """(trip count, rows per chunk) of the rounds loop, read back from the constants."""
    consts = dict(re.findall(r"(%\w+) = arith.constant (\d+) : index", out))
    lb, ub, step = re.search(r"scf.for %\w+ = (%\w+) to (%\w+) step (%\w+)", out).groups()
    assert consts[lb] == "0" and consts[step] == "1"
    rows = re.search(r"arith.muli %\w+, (%\w+) : index", out[out.index("scf.for"):]).group(1)
    return int(consts[ub]), int(consts[rows])


@pytest.mark.parametrize("target,rows,rounds", [("pvc", 64, 8), ("arc", 32, 16)])
def test_1mib_conversion_goes_in_rounds(tmp_path, target, rows, rounds):
    """512x512 f32 (1 MiB): PVC's 128 KiB hold 64 rows (8 rounds), ARC's 64 KiB 32 (16)."""
    out = opt(tmp_path, _kernel(*BIG_CONV), f"xetile-wg-to-sg{{target={target}}}")
    assert re.findall(r"memref.alloc\(\) : (memref<[^>]*>)", out) == [f"memref<{rows}x512xf32, 3 : i64>"]
    assert _loop_bounds(out) == (rounds, rows)
    body = out[out.index("scf.for"):]
    assert body.count("gpu.barrier") == 2 and out.count("gpu.barrier") == 2  # both inside the loop
    # 4 source pieces (16x128) stored under a test each, 1 target piece (16x512) loaded under one
    assert len(re.findall(r"xetile.store_tile %\w+, %\w+ : vector<16x128xf32>, "
                          r"!xetile.tile<16x128xf32, #xetile.tile_attr<memory_space = 3>>", body)) == 4
    assert len(re.findall(r"xetile.load_tile %\w+ : !xetile.tile<16x512xf32, "
                          r"#xetile.tile_attr<memory_space = 3>> -> vector<16x512xf32>", body)) == 1
    assert body.count("scf.if") == 5 and len(re.findall(r"arith.cmpi eq", body)) == 5
    store, barrier1, load = (body.index(s) for s in ("xetile.store_tile", "gpu.barrier", "xetile.load_tile"))
    assert store < barrier1 < load < body.rindex("gpu.barrier")


def test_a_conversion_that_fits_stays_one_exchange(tmp_path):
    """256x128 f32 = 128 KiB fits PVC whole (one buffer, one (named) barrier); ARC: 2 rounds of 128 rows."""
    small = (f"  %r = xetile.tile_conv_layout %v {{wg_map = {wg((4, 4), (64, 32))}}} : vector<256x128xf32> -> "
             "vector<256x128xf32>", tile((256, 128), "f32", wg((16, 1), (16, 128))))
    out = opt(tmp_path, _kernel(*small), "xetile-wg-to-sg{target=pvc}")
    # one barrier: the subgroups exchange within rows of 4, so it is a named barrier per group (sg_groups.py)
    assert "memref<256x128xf32, 3 : i64>" in out and "scf.for" not in out
    assert out.count("gpu.barrier") + out.count("xegpu.nbarrier_wait") == 1
    out = opt(tmp_path, _kernel(*small), "xetile-wg-to-sg{target=arc}")
    assert "memref<128x128xf32, 3 : i64>" in out and _loop_bounds(out) == (2, 128)


def test_chunks_hold_whole_pieces_of_both_maps(tmp_path):
    """512x256 f32 (512 KiB) from 128-row pieces to 16-row bands: a chunk is a multiple of
    128 rows (128 KiB): PVC holds one (4 rounds); ARC's 64 KiB do not, a located error
    naming both maps and what would be legal."""
    src, dst = wg((4, 8), (128, 32)), wg((32, 1), (16, 256))
    conv = (f"  %r = xetile.tile_conv_layout %v {{wg_map = {dst}}} : vector<512x256xf32> -> vector<512x256xf32>",
            tile((512, 256), "f32", src))
    out = opt(tmp_path, _kernel(*conv), "xetile-wg-to-sg{target=pvc}")
    assert "memref<128x256xf32, 3 : i64>" in out and _loop_bounds(out) == (4, 128)
    err = opt(tmp_path, _kernel(*conv), "xetile-wg-to-sg{target=arc}", expect_ok=False)
    assert "in.mlir:6:" in err and "xetile.tile_conv_layout" in err  # located at the conversion
    assert "in rounds of row chunks" in err and "a multiple of 128 rows (131072 B)" in err
    assert "wg_map(sg_layout=[4, 8], sg_data=[128, 32])" in err
    assert "wg_map(sg_layout=[32, 1], sg_data=[16, 256])" in err
    assert "arc has 65536 B per workgroup and 65536 B are left" in err and "fewer rows (sg_data[0])" in err


@pytest.mark.parametrize("height,granule,max_rows,rows", [
    (512, 16, 64, 64),     # 8 rounds of 64
    (512, 16, 60, 48),     # 48-row chunks: 11 rounds; 10 would need 52 -> 64 > 60
    (256, 64, 128, 128),   # 2 rounds
    (192, 32, 100, 96),    # 2 rounds of 96 (not 3 of 96 / 64)
    (160, 16, 100, 80),    # 2 rounds: the smallest buffer for that count (80, not 96)
    (512, 16, 15, 0),      # not one 16-row chunk
])
def test_chunk_rows(height, granule, max_rows, rows):
    assert chunk_rows(height, granule, max_rows) == rows
