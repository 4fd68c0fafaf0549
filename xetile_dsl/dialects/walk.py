"""Every op nested in an op, as a list: what ``Operation.walk()`` yields, in the same order.

xDSL's ``walk`` is a generator per op, region and block (``yield from`` through three
levels for each op), and a compile walks its function ~50 times (each analysis and pass
looks for its ops): about a tenth of the lowering's time.  This walks block
lists by their links, without generators.  The list is taken before the caller looks at
it, so a loop that erases or inserts ops sees the ops as they were (as ``list(op.walk())``)."""
from __future__ import annotations

from xdsl.ir import Block, Operation, Region


def ops_in(root: Operation | Region | Block) -> list[Operation]:
    """``list(root.walk())``: ``root`` (an op) and every op nested in it, pre-order; for a
    region or block, the ops in it."""
    found: list[Operation] = []
    if isinstance(root, Operation):
        found.append(root)
        _collect(root.regions, found)
    elif isinstance(root, Region):
        _collect((root,), found)
    else:
        _collect_block(root, found)
    return found


def _collect(regions, found: list[Operation]) -> None:
    for region in regions:
        block = region.first_block
        while block is not None:
            _collect_block(block, found)
            block = block.next_block


def _collect_block(block: Block, found: list[Operation]) -> None:
    op = block.first_op
    while op is not None:
        found.append(op)
        if op.regions:
            _collect(op.regions, found)
        op = op.next_op
