"""xetile-sg-transpose rules (lowering/passes/sg_transpose.py): a subgroup-level tile_transpose of a
tile loaded only into transposes becomes an order = [0, 1] load (the whole tile family,
through loops and offset updates); a computed one stays for the register path
(tests/lowering/test_register_transpose_rules.py) unless it is operand A of a tile_mma,
then it goes through an SLM buffer and a column-major view of it, with barriers; an SLM
buffer larger than the target's is a located error."""
from __future__ import annotations

import re

from tests.lowering.test_lowering_rules import opt

T = "!xetile.tile<32x16xf32>"
TT = "!xetile.tile<16x32xf32, #xetile.tile_attr<order = [0, 1]>>"


def _kernel(body: str, loop: bool, rows: int = 32, cols: int = 16, elem: str = "f32") -> str:
    """Loads %v (rows x cols) from %a, in a K loop advancing the tile if ``loop``; ``body``
    uses %v and may store to %o."""
    src = f"!xetile.tile<{rows}x{cols}x{elem}>"
    mem = f"memref<1024x1024x{elem}>"
    load = f"%v = xetile.load_tile %{'t' if loop else 't0'} : {src} -> vector<{rows}x{cols}x{elem}>"
    head = f"""func.func @k(%a: {mem}, %o: {mem}) {{
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %t0 = xetile.init_tile %a[%c0, %c0] : {mem} -> {src}
  %to = xetile.init_tile %o[%c0, %c0] : {mem} -> !xetile.tile<{cols}x{rows}x{elem}>
"""
    if not loop:
        return head + f"  {load}\n{body}\n  func.return\n}}"
    return head + f"""  %tn = scf.for %k = %c0 to %c64 step %c16 iter_args(%t = %t0) -> ({src}) {{
    {load}
{body}
    %t2 = xetile.update_tile_offset %t, [%c0, %c16] : {src}
    scf.yield %t2 : {src}
  }}
  func.return
}}"""


STORE_T = """    %r = xetile.tile_transpose %v [1, 0] : vector<32x16xf32> -> vector<16x32xf32>
    xetile.store_tile %r, %to : vector<16x32xf32>, !xetile.tile<16x32xf32>"""

STORE_COMPUTED_T = """    %w = arith.addf %v, %v : vector<32x16xf32>
    %r = xetile.tile_transpose %w [1, 0] : vector<32x16xf32> -> vector<16x32xf32>
    xetile.store_tile %r, %to : vector<16x32xf32>, !xetile.tile<16x32xf32>"""
#: the computed transpose is also operand A of a tile_mma (A's tf32 lane layout is not one
#: column per lane), so it takes the SLM path rather than registers
SLM_COMPUTED_T = STORE_COMPUTED_T + """
    %m = xetile.tile_mma %r, %v : vector<16x32xf32>, vector<32x16xf32> -> vector<16x16xf32>"""


def test_loaded_transpose_folds_into_a_column_major_load_through_the_loop(tmp_path):
    out = opt(tmp_path, _kernel(STORE_T, loop=True), "xetile-sg-transpose")
    assert "tile_transpose" not in out and "memref.alloc" not in out
    assert re.search(r"xetile.init_tile %\w+\[%c0, %c0\] : memref<1024x1024xf32, strided<\[1, 1024\]>> -> "
                     + re.escape(TT), out)
    assert f"iter_args(%t = %1) -> ({TT})" in out
    assert re.search(rf"%(\w+) = xetile.load_tile %t : {re.escape(TT)} -> vector<16x32xf32>\n\s*"
                     r"xetile.store_tile %\1, %to", out)
    assert f"xetile.update_tile_offset %t, %c16, %c0 : {TT}" in out  # the deltas swap


def test_computed_transpose_goes_through_slm_with_barriers_in_a_loop(tmp_path):
    out = opt(tmp_path, _kernel(SLM_COMPUTED_T, loop=True), "xetile-sg-transpose")
    assert "tile_transpose" not in out
    assert "memref.alloc() : memref<32x16xf32, 3 : i64>" in out
    body = out[out.index("scf.for"):]
    barrier, store = body.index("gpu.barrier"), body.index("xetile.store_tile")
    assert barrier < store < body.index("gpu.barrier", store)  # earlier reads; then the stores first
    assert re.search(r"xetile.store_tile %\w+, %\w+ : vector<32x16xf32>, !xetile.tile<32x16xf32, "
                     r"#xetile.tile_attr<memory_space = 3>>", out)
    assert "to memref<16x32xf32, strided<[1, 16]>, 3 : i64>" in out
    assert re.search(r"xetile.load_tile %\w+ : !xetile.tile<16x32xf32, #xetile.tile_attr<order = \[0, 1\], "
                     r"memory_space = 3>> -> vector<16x32xf32>", out)


def test_outside_a_loop_one_barrier(tmp_path):
    out = opt(tmp_path, _kernel(SLM_COMPUTED_T.replace("    ", "  "), loop=False), "xetile-sg-transpose")
    assert out.count("gpu.barrier") == 1


def test_a_tile_also_used_untransposed_is_not_folded(tmp_path):
    body = STORE_T + "\n    %to2 = xetile.init_tile %o[%c64, %c0] : memref<1024x1024xf32> -> " + T + \
        "\n    xetile.store_tile %v, %to2 : vector<32x16xf32>, " + T
    out = opt(tmp_path, _kernel(body, loop=True), "xetile-sg-transpose")
    assert "order = [0, 1]" not in out  # the global tile stays row-major
    assert "xetile.tile_transpose %v" in out and "memref.alloc" not in out  # transposed in registers


def test_the_folded_load_becomes_transposed_xegpu_loads(tmp_path):
    out = opt(tmp_path, _kernel(STORE_T, loop=True),
              "xetile-sg-transpose,xetile-blocking,convert-xetile-to-xegpu")
    loads = re.findall(r"xegpu.load_nd %\w+ \{transpose = array<i64: 1, 0>\} : !xegpu.tensor_desc<16x8xf32> "
                       r"-> vector<8x16xf32>", out)
    assert len(loads) == 4  # the 16x32 view in 8x16 blocks, each a transposed 16x8 read


def test_an_slm_buffer_too_large_is_a_located_error(tmp_path):
    body = """    %w = arith.addf %v, %v : vector<256x256xf32>
    %r = xetile.tile_transpose %w [1, 0] : vector<256x256xf32> -> vector<256x256xf32>
    %m = xetile.tile_mma %r, %v : vector<256x256xf32>, vector<256x256xf32> -> vector<256x256xf32>"""
    err = opt(tmp_path, _kernel(body, loop=True, rows=256, cols=256), "xetile-sg-transpose", expect_ok=False)
    assert "shared local memory (262144 B" in err and "per workgroup" in err and "transpose a loaded tile" in err


def test_several_subgroups_get_one_slm_slice_each(tmp_path):
    """In a kernel wg-to-sg gave 4 subgroups, subgroup s stores at row 32 s of a 128x16
    buffer and reads the transpose at column 32 s of its [1, 16]-strided 16x128 view."""
    text = _kernel(SLM_COMPUTED_T, loop=False).replace(
        ") {", ") attributes {xetile.num_subgroups = 4 : i32} {", 1)
    out = opt(tmp_path, text, "xetile-sg-transpose")
    assert "memref.alloc() : memref<128x16xf32, 3 : i64>" in out
    sg, c32, row = re.search(r'(%\w+) = "gpu.subgroup_id"\(\) : \(\) -> index\n\s*(%\w+) = arith.constant 32 : index'
                             r'\n\s*(%\w+) = arith.muli \1, \2 : index', out).groups()
    assert re.search(rf"xetile.init_tile %\w+\[{row}, %\w+\] : memref<128x16xf32, 3 : i64> -> "
                     r"!xetile.tile<32x16xf32, #xetile.tile_attr<memory_space = 3>>", out)
    assert "to memref<16x128xf32, strided<[1, 16]>, 3 : i64>" in out
    assert re.search(rf"xetile.init_tile %\w+\[%\w+, {row}\] : memref<16x128xf32, strided<\[1, 16\]>, 3 : i64> -> "
                     r"!xetile.tile<16x32xf32, #xetile.tile_attr<order = \[0, 1\], memory_space = 3>>", out)


def test_a_column_major_tile_flips_back_to_row_major(tmp_path):
    """An order = [0, 1] 32x16 view (sizes and strides swapped by the frontend) loaded only
    into a transpose becomes the 16x32 row-major tile of its array (sizes, strides back)."""
    text = f"""func.func @k(%a: memref<?x?xf32>, %o: memref<1024x1024xf32>, %m: index, %n: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = xetile.init_tile %a[%c0, %c0], [%n, %m], [%c1, %m] : memref<?x?xf32> -> {T[:-1]}, #xetile.tile_attr<order = [0, 1]>>
  %v = xetile.load_tile %t : {T[:-1]}, #xetile.tile_attr<order = [0, 1]>> -> vector<32x16xf32>
  %to = xetile.init_tile %o[%c0, %c0] : memref<1024x1024xf32> -> !xetile.tile<16x32xf32>
{STORE_T}
  func.return
}}"""
    out = opt(tmp_path, text, "xetile-sg-transpose")
    assert "order = [0, 1]" not in out and "tile_transpose" not in out
    assert "xetile.init_tile %a[%c0, %c0], [%m, %n], [%m, %c1] : memref<?x?xf32> -> !xetile.tile<16x32xf32>" in out
    assert re.search(r"xetile.load_tile %\w+ : !xetile.tile<16x32xf32> -> vector<16x32xf32>", out)
