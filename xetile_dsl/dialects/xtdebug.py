"""``xtdebug``: debugging ops of xetile_dsl (not part of the XeTile RFC).

One op, ``xtdebug.print``: Python's ``print(...)`` inside a kernel.  ``format`` is a
``str.format`` template whose ``{}`` fields take the operands in order (constant
arguments are already folded into the text; literal braces are doubled)::

    xtdebug.print "acc = {} at k = {}\\n" %acc, %k : vector<32x32xf32>, index

Only the interpreter (``XETILE_INTERPRET=1``) executes it; the compiler rejects a kernel
that contains one (:func:`reject_debug_ops`), at the line of the ``print`` call.
"""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, var_operand_def

from ..errors import LoweringError
from .walk import ops_in

PRINT_ONLY_INTERPRETED = ("print() is only supported with XETILE_INTERPRET=1 (or kernel.on(\"interpret\")); "
                          "remove it to compile the kernel")


@irdl_op_definition
class PrintOp(IRDLOperation):
    """Print ``format`` with the operands' values substituted (interpreter only)."""

    name = "xtdebug.print"
    format = prop_def(StringAttr)
    args = var_operand_def()
    assembly_format = "$format ($args^ `:` type($args))? attr-dict"

    def __init__(self, fmt: str, args: Sequence[SSAValue] = ()):
        super().__init__(operands=[list(args)], properties={"format": StringAttr(fmt)})


XTDebug = Dialect("xtdebug", [PrintOp], [])


def reject_debug_ops(module) -> None:
    """Raise :class:`LoweringError` at the first ``xtdebug`` op: code generation has no
    printf, so a kernel that prints can only run in the interpreter."""
    for op in ops_in(module):
        if op.name.startswith("xtdebug."):
            raise LoweringError(PRINT_ONLY_INTERPRETED, op)


__all__ = ["PrintOp", "XTDebug", "reject_debug_ops", "PRINT_ONLY_INTERPRETED"]
