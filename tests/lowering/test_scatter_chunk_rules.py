"""Rules for scattered descriptors with ``chunk_size > 1`` written at XeGPU level
(``tests/kernels/scatter_chunk.py``), through the opt tool: the XeTile passes leave an XeGPU
kernel alone, and xegpu-simt gives each chunked descriptor the RFC's
``wi_layout = [sg, 1]``, ``wi_data = [1, 32 / bits]`` and each lane the ``chunk``
elements of its own offset (``vector<chunk x 1 x T>``), one offset and mask bit per lane."""
from __future__ import annotations

import re

import pytest

from kernels.scatter_chunk import chunk_gather_scatter

from .test_lowering_rules import opt


@pytest.mark.parametrize("target,sg", [("pvc", 16), ("arc", 8)])
@pytest.mark.parametrize("elem,chunk,data", [("f32", 4, 1), ("f16", 8, 2)])
def test_chunked_descriptors_map_one_row_per_lane(tmp_path, target, sg, elem, chunk, data):
    even = [lane % 2 == 0 for lane in range(sg)]
    text = chunk_gather_scatter(elem, chunk, sg, range(sg), [True] * sg, range(sg), even)
    xegpu = opt(tmp_path, text, f"xetile-wg-to-sg{{target={target}}},xetile-blocking{{target={target}}},"
                                "convert-xetile-to-xegpu")
    assert xegpu.count("xegpu.create_tdesc") == 2 and f"vector<{chunk}x{sg}x{elem}>" in xegpu
    simt = opt(tmp_path, text, f"xegpu-simt{{target={target}}}")
    desc = (rf"!xegpu.tensor_desc<{sg}x{chunk}x{elem}, #xegpu.scatter_tdesc_attr<chunk_size = {chunk}>, "
            rf"#xegpu.sg_map<wi_layout = \[{sg}, 1\], wi_data = \[1, {data}\]>>")
    assert len(re.findall(rf"xegpu.create_tdesc %\w+, %\w+ : memref<{sg * chunk}x{elem}>, vector<1xindex> -> "
                          + desc, simt)) == 2
    assert re.search(rf"xegpu.load %\w+, %\w+ \{{transpose\}} : {desc}, vector<1xi1> -> vector<{chunk}x1x{elem}>",
                     simt)
    assert re.search(rf"xegpu.store %\w+, %\w+, %\w+ : vector<{chunk}x1x{elem}>, {desc}, vector<1xi1>", simt)
    assert re.search(rf"arith.addf %\w+, %\w+ : vector<{chunk}x1x{elem}>", simt)


def test_a_kernel_in_simt_form_is_left_as_written(tmp_path):
    """Every descriptor already has its sg_map: xegpu-simt has nothing to distribute."""
    from tests.e2e.test_scatter_chunk import SIMT_COPY

    simt = opt(tmp_path, SIMT_COPY, "xegpu-simt{target=pvc}")
    assert simt == opt(tmp_path, SIMT_COPY, "xetile-blocking{target=pvc}")
    assert "vector<8x1xf32>" in simt and "vector<1xi1>" in simt
