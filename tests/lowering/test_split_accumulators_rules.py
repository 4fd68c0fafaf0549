"""xegpu-split-accumulators (K-loop fission over accumulator groups) and the register
budget around it, through the opt tool: XeTile or XeGPU MLIR in, XeGPU MLIR out."""
from __future__ import annotations

import re
import subprocess
import sys

import xetile_dsl as xd
from tests.lowering.test_lowering_rules import mma_kernel, opt, wg
from kernels.fused import gemm_epilogue

EPILOGUE_SIG = {"a": "bf16[:,:]", "b": "bf16[:,:]", "bias": "f32[:,:]", "scale": "f32[:,:]", "c": "bf16[:,:]",
                "K": "i32"}
RFC_25_MAPS = (wg((8, 4), (64, 32)), wg((8, 4), (32, 64)), wg((8, 4), (64, 64)))


def _to_xegpu(target: str, split: str = "") -> str:
    opts = f"{{target={target}{' ' + split if split else ''}}}"
    return (f"xetile-wg-to-sg{{target={target}}},xetile-blocking{{target={target}}},convert-xetile-to-xegpu,"
            f"xegpu-split-accumulators{opts}")


def _loops(text: str) -> list[str]:
    """The text of each top-level scf.for of the function, header to closing brace."""
    lines, loops, cur = text.splitlines(), [], None
    for ln in lines:
        if cur is None and re.match(r"\s{4}\S.*= scf.for ", ln):
            cur = [ln]
        elif cur is not None:
            cur.append(ln)
            if ln == "    }":
                loops.append("\n".join(cur))
                cur = None
    return loops


def _iter_arg_types(loop: str) -> list[str]:
    header = loop.splitlines()[0]
    return re.findall(r"!xegpu\.tensor_desc<[^>]*>|vector<[^>]*>", header[header.rindex(") -> ("):])


def test_rfc_2_5_accumulator_is_split_into_two_loops_on_pvc(tmp_path):
    """64x64 f32 per subgroup (16 KiB) + one DPAS K block of A and B (4 KiB) > 12 KiB:
    two copies, each carrying 16 of the 32 8x16 accumulator blocks, the descriptors of
    its 32 rows of A (4 blocks x 2 K blocks) and all of B (4 x 2)."""
    out = opt(tmp_path, mma_kernel(512, 256, 32, "f16", "f32", RFC_25_MAPS), _to_xegpu("pvc"))
    loops = _loops(out)
    assert len(loops) == 2
    for loop in loops:
        types = _iter_arg_types(loop)
        assert types.count("vector<8x16xf32>") == 16
        assert types.count("!xegpu.tensor_desc<8x16xf16>") == 8 and types.count("!xegpu.tensor_desc<16x16xf16>") == 8
        assert loop.count("xegpu.dpas") == 32 and loop.count("xegpu.load_nd") == 16
    # the first copy's 16 blocks are stored between the loops (their registers are free
    # before the second copy runs), the second copy's after it
    between = out[out.index(loops[0]) + len(loops[0]):out.index(loops[1])]
    after = out[out.index(loops[1]) + len(loops[1]):]
    assert between.count("xegpu.store_nd") == 16 and after.count("xegpu.store_nd") == 16


def test_each_copy_keeps_its_own_block_rows(tmp_path):
    """Copy 0 stores rows 0..31 of the subgroup's piece, copy 1 rows 32..63: the A rows
    each loop loads start where its stores do."""
    out = opt(tmp_path, mma_kernel(512, 256, 32, "f16", "f32", RFC_25_MAPS), _to_xegpu("pvc"))
    loops = _loops(out)
    for loop in loops:
        assert "xegpu.store_nd" not in loop and '"gpu.barrier"' not in loop
    first, second = (set(re.findall(r"xegpu.load_nd (%\w+) :", loop)) for loop in loops)
    assert not first & second  # block arguments of different loops


def test_arc_needs_eight_copies(tmp_path):
    """ARC (8 KiB file, 6 KiB budget): 16-row groups still need 6.5 KiB, 8-row groups 4.25."""
    out = opt(tmp_path, mma_kernel(512, 256, 32, "f16", "f32", RFC_25_MAPS), _to_xegpu("arc"))
    loops = _loops(out)
    assert len(loops) == 8
    for loop in loops:
        types = _iter_arg_types(loop)
        assert types.count("vector<8x8xf32>") == 8  # one block row of 8 8x8 blocks
        assert loop.count("xegpu.dpas") == 16


def test_fitting_accumulator_is_not_split(tmp_path):
    """32x64 per subgroup (8 KiB + 3 KiB): one loop, as before."""
    maps = (wg((8, 4), (32, 32)), wg((8, 4), (32, 64)), wg((8, 4), (32, 64)))
    out = opt(tmp_path, mma_kernel(256, 256, 32, "f16", "f32", maps), _to_xegpu("pvc"))
    assert len(_loops(out)) == 1 and out.count("xegpu.dpas") == 32


def test_forced_parts_split_columns_when_rows_run_out(tmp_path):
    """A 16x32 piece (2 x 2 blocks) in 4 copies: one block each (rows, then columns)."""
    maps = (wg((8, 4), (16, 32)), wg((8, 4), (32, 32)), wg((8, 4), (16, 32)))
    out = opt(tmp_path, mma_kernel(128, 128, 32, "f16", "f32", maps), _to_xegpu("pvc", "parts=4"))
    loops = _loops(out)
    assert len(loops) == 4
    for loop in loops:
        types = _iter_arg_types(loop)
        assert types.count("vector<8x16xf32>") == 1
        assert types.count("!xegpu.tensor_desc<8x16xf16>") == 2  # one A block row, 2 K blocks
        assert types.count("!xegpu.tensor_desc<16x16xf16>") == 2  # one B block column, 2 K blocks
        assert loop.count("xegpu.dpas") == 2


def _xegpu_loop(store_in_loop: bool) -> str:
    """Two 8x16 accumulators fed by two A blocks and one B block per K step (XeGPU level)."""
    store = "      xegpu.store_nd %va0, %o : vector<8x16xf16>, !xegpu.tensor_desc<8x16xf16>\n" if store_in_loop else ""
    return f"""
func.func @k(%a: memref<64x64xf16>, %b: memref<64x64xf16>, %c: memref<64x64xf32>, %out: memref<64x64xf16>) {{
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %ta0 = xegpu.create_nd_tdesc %a[%c0, %c0] : memref<64x64xf16> -> !xegpu.tensor_desc<8x16xf16>
  %ta1 = xegpu.create_nd_tdesc %a[%c8, %c0] : memref<64x64xf16> -> !xegpu.tensor_desc<8x16xf16>
  %tb = xegpu.create_nd_tdesc %b[%c0, %c0] : memref<64x64xf16> -> !xegpu.tensor_desc<16x16xf16>
  %o = xegpu.create_nd_tdesc %out[%c0, %c0] : memref<64x64xf16> -> !xegpu.tensor_desc<8x16xf16>
  %z = arith.constant dense<0.0> : vector<8x16xf32>
  %r:5 = scf.for %k = %c0 to %c64 step %c16 iter_args(%x0 = %z, %x1 = %z, %pa0 = %ta0, %pa1 = %ta1, %pb = %tb) -> (vector<8x16xf32>, vector<8x16xf32>, !xegpu.tensor_desc<8x16xf16>, !xegpu.tensor_desc<8x16xf16>, !xegpu.tensor_desc<16x16xf16>) {{
      %va0 = xegpu.load_nd %pa0 : !xegpu.tensor_desc<8x16xf16> -> vector<8x16xf16>
      %va1 = xegpu.load_nd %pa1 : !xegpu.tensor_desc<8x16xf16> -> vector<8x16xf16>
      %vb = xegpu.load_nd %pb {{packed}} : !xegpu.tensor_desc<16x16xf16> -> vector<8x16x2xf16>
{store}      %d0 = xegpu.dpas %va0, %vb, %x0 : vector<8x16xf16>, vector<8x16x2xf16>, vector<8x16xf32> -> vector<8x16xf32>
      %d1 = xegpu.dpas %va1, %vb, %x1 : vector<8x16xf16>, vector<8x16x2xf16>, vector<8x16xf32> -> vector<8x16xf32>
      %na0 = xegpu.update_nd_offset %pa0, [%c0, %c16] : !xegpu.tensor_desc<8x16xf16>
      %na1 = xegpu.update_nd_offset %pa1, [%c0, %c16] : !xegpu.tensor_desc<8x16xf16>
      %nb = xegpu.update_nd_offset %pb, [%c16, %c0] : !xegpu.tensor_desc<16x16xf16>
      scf.yield %d0, %d1, %na0, %na1, %nb : vector<8x16xf32>, vector<8x16xf32>, !xegpu.tensor_desc<8x16xf16>, !xegpu.tensor_desc<8x16xf16>, !xegpu.tensor_desc<16x16xf16>
  }}
  %tc0 = xegpu.create_nd_tdesc %c[%c0, %c0] : memref<64x64xf32> -> !xegpu.tensor_desc<8x16xf32>
  %tc1 = xegpu.create_nd_tdesc %c[%c8, %c0] : memref<64x64xf32> -> !xegpu.tensor_desc<8x16xf32>
  xegpu.store_nd %r#0, %tc0 : vector<8x16xf32>, !xegpu.tensor_desc<8x16xf32>
  xegpu.store_nd %r#1, %tc1 : vector<8x16xf32>, !xegpu.tensor_desc<8x16xf32>
  func.return
}}"""


def test_xegpu_input_split_drops_dead_iter_args_and_loads(tmp_path):
    """parts=2 on XeGPU input: each copy carries its accumulator, its A descriptor and B;
    the other A block's load and update are gone; copy 0's store moved between the loops."""
    out = opt(tmp_path, _xegpu_loop(False), "xegpu-split-accumulators{parts=2}")
    loops = _loops(out)
    assert len(loops) == 2
    for loop, a_desc in zip(loops, ("%ta0", "%ta1")):
        assert _iter_arg_types(loop) == ["vector<8x16xf32>", "!xegpu.tensor_desc<8x16xf16>",
                                         "!xegpu.tensor_desc<16x16xf16>"]
        assert f"= {a_desc}," in loop.splitlines()[0]
        assert loop.count("xegpu.load_nd") == 2 and loop.count("xegpu.dpas") == 1
        assert loop.count("xegpu.update_nd_offset") == 2
    between = out[out.index(loops[0]) + len(loops[0]):out.index(loops[1])]
    assert re.search(r"xegpu.store_nd %\w+, %tc0", between)
    assert re.search(r"xegpu.store_nd %\w+, %tc1", out[out.index(loops[1]):])


def test_loop_with_a_store_is_not_split(tmp_path):
    out = opt(tmp_path, _xegpu_loop(True), "xegpu-split-accumulators{parts=2}")
    assert len(_loops(out)) == 1 and out.count("xegpu.dpas") == 2


def test_budget_fit_leaves_the_xegpu_loop_alone(tmp_path):
    """Two 8x16 f32 blocks are far below the budget: no split without parts."""
    out = opt(tmp_path, _xegpu_loop(False), "xegpu-split-accumulators")
    assert len(_loops(out)) == 1


def _with_store_in_loop(text: str) -> str:
    """mma_kernel with A's tile stored to %o inside the K loop (the loop writes memory)."""
    ta = re.search(r"%ta = xetile.init_tile %a\[%c0, %c0\] : (memref<[^>]*>) -> (.*)\n", text)
    memref, ty = ta.group(1), ta.group(2)
    vec = re.search(r"%va = xetile.load_tile %xa : .* -> (vector<[^>]*>)", text).group(1)
    store = (f"    %to = xetile.init_tile %o[%c0, %c0] : {memref} -> {ty}\n"
             f"    xetile.store_tile %va, %to : {vec}, {ty}\n")
    text = text.replace("    %na = xetile.update_tile_offset", store + "    %na = xetile.update_tile_offset")
    return text.replace("%c: memref<1024x1024xf32>", f"%c: memref<1024x1024xf32>, %o: {memref}")


def test_accumulator_larger_than_the_register_file_is_split_on_arc(tmp_path):
    """RFC 2.5's mp_c on ARC: wg-to-sg leaves its verdict on the loop, the split pass
    splits it and notes it (8 passes); no error."""
    path = tmp_path / "in.mlir"
    path.write_text(mma_kernel(512, 256, 32, "f16", "f32", RFC_25_MAPS))
    distributed = opt(tmp_path, path.read_text(), "xetile-wg-to-sg{target=arc}")
    assert "xetile.register_budget" in distributed
    proc = subprocess.run([sys.executable, "-m", "xetile_dsl", "opt", str(path), "-p", _to_xegpu("arc")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "AccumulatorSplitNote" in proc.stderr and "the K loop runs in 8 passes" in proc.stderr
    assert "sg_data of at most [32, 32]" in proc.stderr and "will spill" not in proc.stderr
    assert "xetile.register_budget" not in proc.stdout and len(_loops(proc.stdout)) == 8


def test_unsplittable_accumulator_larger_than_the_register_file_is_an_error(tmp_path):
    """The same loop storing inside: it cannot run twice, so the old located error."""
    text = _with_store_in_loop(mma_kernel(512, 256, 32, "f16", "f32", RFC_25_MAPS))
    err = opt(tmp_path, text, "xetile-wg-to-sg{target=arc}", expect_ok=False)
    assert "accumulator is 64x64xf32 = 16384 bytes" in err
    assert "256 GRFs x 32 bytes = 8192 bytes" in err and "cannot be run in several passes" in err
    assert "sg_data of at most [32, 32]" in err


def test_unsplittable_accumulator_that_fills_the_register_file_warns(tmp_path):
    """On pvc the same store-in-loop kernel fits the 16 KiB file only without A and B:
    the old "will spill" warning, and the XeGPU loop stays whole."""
    text = _with_store_in_loop(mma_kernel(512, 256, 32, "f16", "f32", RFC_25_MAPS))
    path = tmp_path / "in.mlir"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "xetile_dsl", "opt", str(path), "-p", _to_xegpu("pvc")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "will spill registers on pvc" in proc.stderr and "sg_data of at most [32, 64]" in proc.stderr
    assert "20480 bytes" in proc.stderr  # 16 KiB + one DPAS K block of A (64x16) and B (16x64)
    assert len(_loops(proc.stdout)) == 1


def test_epilogues_of_split_copies_each_read_the_bias_row():
    """ARC 16x64 bias + ReLU: two copies.  The bias row (descriptors, loads, broadcasts)
    that both epilogues use is cloned into the first one, not moved there: moved, it
    stayed live through the second loop (768 B of spills on dg2-g10).  Each epilogue
    reads the row's eight 1x8 blocks itself."""
    out = xd.compile(gemm_epilogue, EPILOGUE_SIG, {"BM": 16, "BN": 64, "BK": 16, "EPI": 2}, target="cpu-arc").asm["xegpu"]
    loops = _loops(out)
    assert len(loops) == 2
    between = out[out.index(loops[0]) + len(loops[0]):out.index(loops[1])]
    after = out[out.index(loops[1]) + len(loops[1]):]
    for epilogue in (between, after):
        # the row's eight 1x8 blocks, read one by one or as one array_length = 8 message
        # (row loads are combined: docs/decisions/025)
        blocks = epilogue.count("-> vector<1x8xf32>") + 8 * epilogue.count("-> vector<8x1x8xf32>")
        assert blocks == 8 and epilogue.count("xetile.tile_broadcast") == 8
        assert epilogue.count("xegpu.store_nd") == 8
