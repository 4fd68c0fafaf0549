"""A hand-written XeGPU kernel using scattered descriptors with ``chunk_size > 1``
(each lane reads/writes ``chunk`` consecutive elements at its own offset), the XeGPU RFC's
``create_tdesc``/``load {transpose}``/``store`` form.  Used by the chunked-scatter tests
(rules, CPU-device runs and ISA checks) and as an opt-tool / ``compile_mlir`` example."""
from __future__ import annotations

import numpy as np


def _bools(bits) -> str:
    return ", ".join("true" if b else "false" for b in bits)


def chunk_gather_scatter(elem: str, chunk: int, sg: int, load_rows, load_mask, store_rows, store_mask) -> str:
    """MLIR: lane n loads ``chunk`` elements at ``src[load_rows[n] * chunk:]`` under
    ``load_mask[n]`` (masked lanes read 0), doubles them and stores them at
    ``out[store_rows[n] * chunk:]`` under ``store_mask[n]``.  Both arrays are 1-D with
    ``sg * chunk`` elements."""
    n = sg * chunk
    tdesc = f"!xegpu.tensor_desc<{sg}x{chunk}x{elem}, #xegpu.scatter_tdesc_attr<chunk_size = {chunk}>>"
    mem, value = f"memref<{n}x{elem}>", f"vector<{chunk}x{sg}x{elem}>"
    offsets = lambda rows: ", ".join(str(int(r) * chunk) for r in rows)  # noqa: E731
    return f"""
func.func @chunk_gather_scatter(%src: {mem}, %out: {mem}) {{
  %lo = arith.constant dense<[{offsets(load_rows)}]> : vector<{sg}xindex>
  %lm = arith.constant dense<[{_bools(load_mask)}]> : vector<{sg}xi1>
  %so = arith.constant dense<[{offsets(store_rows)}]> : vector<{sg}xindex>
  %sm = arith.constant dense<[{_bools(store_mask)}]> : vector<{sg}xi1>
  %ld = xegpu.create_tdesc %src, %lo : {mem}, vector<{sg}xindex> -> {tdesc}
  %v = xegpu.load %ld, %lm {{transpose}} : {tdesc}, vector<{sg}xi1> -> {value}
  %w = arith.addf %v, %v : {value}
  %st = xegpu.create_tdesc %out, %so : {mem}, vector<{sg}xindex> -> {tdesc}
  xegpu.store %w, %st, %sm : {value}, {tdesc}, vector<{sg}xi1>
  func.return
}}
"""


def reference(src: np.ndarray, out: np.ndarray, chunk: int, load_rows, load_mask, store_rows, store_mask) -> np.ndarray:
    """numpy result of :func:`chunk_gather_scatter` on a copy of ``out``."""
    rows_in, rows_out = src.reshape(-1, chunk), out.copy().reshape(-1, chunk)
    for lane, (lr, lm, sr, sm) in enumerate(zip(load_rows, load_mask, store_rows, store_mask, strict=True)):
        if sm:
            rows_out[sr] = 2 * rows_in[lr] if lm else 0
    return rows_out.reshape(-1)
