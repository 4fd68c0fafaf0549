"""Ops that parse and verify (the IR issue) but that no lowering pass handles yet.

The passes split vectors into subgroup pieces and blocks; an op they do not know would be
cloned with the wrong types.  Each pass that splits values calls ``reject_unlowered``
first, so such a kernel stops with a located error that names the op and the XeTile op
to use instead."""
from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from ...dialects.walk import ops_in
from ...errors import LoweringError

#: MLIR op name -> what to write instead
_ALTERNATIVES = {
    "vector.transpose": "xetile.tile_transpose (xt.transpose in the DSL)",
    "vector.multi_reduction": "xetile.tile_reduce (xt.sum/xt.max/... or xt.tile_reduce)",
    "vector.shape_cast": "a tile of the wanted shape (init_tile/load_tile), or tile_reduce/tile_broadcast",
    "vector.bitcast": "xt.astype on the values (bit reinterpretation is not lowered)",
    "vector.extract_strided_slice": "a tile of the wanted shape (the XeGPU conversion makes these itself)",
    "vector.insert_strided_slice": "a tile of the wanted shape (the XeGPU conversion makes these itself)",
}


def reject_unlowered(module: ModuleOp, pass_name: str) -> None:
    """Raise a located ``LoweringError`` for the first op no lowering supports."""
    for op in ops_in(module):
        instead = _ALTERNATIVES.get(op.name)
        if instead is not None:
            raise LoweringError(f"{op.name} is accepted by the IR but not lowered by {pass_name}; "
                                f"use {instead}", op)
