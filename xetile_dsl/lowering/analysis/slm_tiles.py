"""Rules for the user's shared local memory (``xt.slm_alloc``, RFC Appendix 2.4).

A ``memref.alloc`` in memory space 3 before ``xetile-wg-to-sg`` is the user's: one buffer
per workgroup, shared by its subgroups. Tiles over it (``init_tile`` with
``memory_space = 3``) are distributed by their wg_map exactly like tiles over global
arrays (wg_to_sg.py keeps the memory space on every piece), and the later stages read
and write SLM pieces per lane (codegen/emit/slm.py). This module checks the buffers' total
against ``Target.slm_bytes`` in the user's terms, before any compiler exchange is added.
"""
from __future__ import annotations

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import IntegerAttr

from ...dialects.walk import ops_in
from ...errors import LoweringError
from ...dialects.types import bit_width, type_name
from ...targets import Target
from ...targets.slm_budget import SlmBudget

SLM_SPACE = 3


def is_slm_alloc(op) -> bool:
    """Whether ``op`` allocates shared local memory."""
    if not isinstance(op, memref.AllocOp):
        return False
    space = op.memref.type.memory_space
    return isinstance(space, IntegerAttr) and space.value.data == SLM_SPACE


def _describe(op) -> tuple[str, int]:
    t = op.memref.type
    shape = list(t.get_shape())
    nbytes = bit_width(t.element_type) // 8
    for s in shape:
        nbytes *= s
    return f"{'x'.join(map(str, shape))} {type_name(t.element_type)} = {nbytes} B", nbytes


def check_user_slm(fn: func.FuncOp, target: Target) -> int:
    """Bytes of SLM the user's buffers take; a located error at the first buffer that
    does not fit, naming every buffer so far, the total and what the target has."""
    budget, seen = SlmBudget(target), []
    for op in ops_in(fn):
        if not is_slm_alloc(op):
            continue
        text, nbytes = _describe(op)
        seen.append(text)
        if not budget.reserve(nbytes):
            raise LoweringError(
                f"the xt.slm_alloc buffers of this kernel need {budget.used} B of shared local memory "
                f"({', '.join(seen)}), but {target.name} has {target.slm_bytes} B per workgroup; "
                f"allocate at most {target.slm_bytes} B in all (e.g. fewer or smaller K slices per buffer)", op)
    return budget.used
