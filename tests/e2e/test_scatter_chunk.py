"""Scattered accesses with ``chunk_size > 1`` end to end: a hand-written XeGPU kernel
(``tests/kernels/scatter_chunk.py``: each lane gathers ``chunk`` consecutive elements at a
permuted offset under a mask, doubles them and scatters them under another mask) run by
``compile_mlir`` on the OpenCL CPU device for both lane counts, against numpy."""
from __future__ import annotations

import re

import numpy as np
import pytest

import xetile_dsl as xd
from xetile_dsl.errors import LoweringError
from kernels.scatter_chunk import chunk_gather_scatter, reference

DTYPES = {"f32": np.float32, "f16": np.float16}


def _case(sg: int, seed: int):
    """(load rows, load mask, store rows, store mask): permutations; some lanes off."""
    rng = np.random.default_rng(seed)
    load_mask = [lane % 3 != 0 for lane in range(sg)]
    store_mask = [lane % 4 != 1 for lane in range(sg)]
    return rng.permutation(sg), load_mask, rng.permutation(sg), store_mask


WIDER = [pytest.param("cpu-pvc", 16, 3, "f32", id="cpu-pvc-3-f32"),  # a 3-vector per lane
         pytest.param("cpu-pvc", 16, 16, "f16", id="cpu-pvc-16-f16"),  # 512 bytes, 8 words per lane
         pytest.param("cpu-arc", 8, 16, "f32", id="cpu-arc-16-f32")]  # 512 bytes on 8 lanes


@pytest.mark.parametrize("elem", ["f32", "f16"])
@pytest.mark.parametrize("chunk", [2, 4, 8])
@pytest.mark.parametrize("target,sg", [("cpu-pvc", 16), ("cpu-arc", 8)])
def test_chunked_gather_scatter_matches_numpy(target, sg, chunk, elem):
    _run_and_compare(target, sg, chunk, elem)


@pytest.mark.parametrize("target,sg,chunk,elem", WIDER)
def test_other_legal_chunk_sizes_match_numpy(target, sg, chunk, elem):
    _run_and_compare(target, sg, chunk, elem)


def _run_and_compare(target, sg, chunk, elem):
    case = _case(sg, seed=chunk)
    kernel = xd.compile_mlir(chunk_gather_scatter(elem, chunk, sg, *case), target)
    n = sg * chunk
    src = np.random.default_rng(1).standard_normal(n).astype(DTYPES[elem])
    out = np.full(n, -5, DTYPES[elem])
    want = reference(src, out, chunk, *case)
    kernel.launch((1,), [src, out])
    np.testing.assert_array_equal(out, want)
    assert (out == -5).sum() == chunk * sum(not m for m in case[3])  # masked-off stores left memory alone
    assert (out == 0).sum() >= chunk * sum(sm and not case[1][lane]  # masked-off loads read 0
                                           for lane, sm in enumerate(case[3]))


def test_more_than_512_bytes_per_access_is_rejected():
    """16 lanes x 64 f32 = 4096 bytes: the descriptor is refused, naming the largest
    legal chunk_size."""
    text = chunk_gather_scatter("f32", 64, 16, range(16), [True] * 16, range(16), [True] * 16)
    with pytest.raises(Exception, match=r"more than the 512-byte limit; use chunk_size <= 8"):
        xd.compile_mlir(text, "cpu-pvc")


def test_a_16_bit_chunk_must_fill_32_bit_units():
    text = chunk_gather_scatter("f16", 3, 16, range(16), [True] * 16, range(16), [True] * 16)
    with pytest.raises(Exception, match=r"not 32-bit aligned per lane; use a multiple of 2"):
        xd.compile_mlir(text, "cpu-pvc")


#: the RFC's SIMT form written by hand: lane n copies its 8 floats at n * 8 when n is even
_DESC = ("!xegpu.tensor_desc<16x8xf32, #xegpu.scatter_tdesc_attr<chunk_size = 8>, "
         "#xegpu.sg_map<wi_layout = [16, 1], wi_data = [1, 1]>>")
SIMT_COPY = """
func.func @k(%src: memref<128xf32>, %out: memref<128xf32>) {
  %c8 = arith.constant dense<8> : vector<1xindex>
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %lane = "gpu.lane_id"() : () -> index
  %l = vector.broadcast %lane : index to vector<1xindex>
  %offs = arith.muli %l, %c8 : vector<1xindex>
  %odd = arith.remui %lane, %c2 : index
  %even = arith.cmpi eq, %odd, %c0 : index
  %m = vector.broadcast %even : i1 to vector<1xi1>
  %td = xegpu.create_tdesc %src, %offs : memref<128xf32>, vector<1xindex> -> #desc
  %v = xegpu.load %td, %m {transpose} : #desc, vector<1xi1> -> vector<8x1xf32>
  %td2 = xegpu.create_tdesc %out, %offs : memref<128xf32>, vector<1xindex> -> #desc
  xegpu.store %v, %td2, %m : vector<8x1xf32>, #desc, vector<1xi1>
  func.return
}
""".replace("#desc", _DESC)


def test_the_rfc_simt_form_runs_as_written():
    src, out = np.arange(128, dtype=np.float32), np.full(128, -1, np.float32)
    xd.compile_mlir(SIMT_COPY, "cpu-pvc").launch((1,), [src, out])
    even_lanes = (np.arange(128) // 8) % 2 == 0
    np.testing.assert_array_equal(out, np.where(even_lanes, src, -1))


def test_atomics_through_a_chunked_descriptor_are_rejected():
    store = re.search(r"  xegpu.store %v, %td2, %m : (vector<8x1xf32>), (.*)\n", SIMT_COPY)
    text = SIMT_COPY.replace(store.group(0), f"  %old = xegpu.atomic_rmw addf %v, %td2, %m : {store.group(1)}, "
                                             f"{store.group(2)} -> {store.group(1)}\n")
    with pytest.raises(LoweringError, match=r"an atomic message updates one element per lane"):
        xd.compile_mlir(text, "cpu-pvc")


def test_update_offset_moves_a_chunked_descriptor():
    """Lane n loads row n % 8, moved 8 rows on by ``xegpu.update_offset`` (the SIMT form
    keeps one delta per lane)."""
    sg, chunk = 16, 4
    text = chunk_gather_scatter("f32", chunk, sg, [r % 8 for r in range(sg)], [True] * sg, range(sg), [True] * sg)
    tdesc = f"!xegpu.tensor_desc<{sg}x{chunk}xf32, #xegpu.scatter_tdesc_attr<chunk_size = {chunk}>>"
    text = text.replace("  %v = xegpu.load %ld,",
                        f"  %d = arith.constant dense<{8 * chunk}> : vector<{sg}xindex>\n"
                        f"  %ld2 = xegpu.update_offset %ld, %d : {tdesc}, vector<{sg}xindex>\n"
                        "  %v = xegpu.load %ld2,")
    src, out = np.arange(sg * chunk, dtype=np.float32), np.zeros(sg * chunk, np.float32)
    xd.compile_mlir(text, "cpu-pvc").launch((1,), [src, out])
    np.testing.assert_array_equal(out, 2 * src.reshape(sg, chunk)[[r % 8 + 8 for r in range(sg)]].reshape(-1))
