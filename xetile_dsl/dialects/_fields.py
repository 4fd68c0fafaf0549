"""IRDL field helpers for the op classes.

xDSL 0.74 reads an op's fields from its class body and from the bodies of its
undecorated parent classes (a base op class without ``@irdl_op_definition``: its fields
come after the op's own, so operands that must come first stay in the op).  An op class
that is already decorated has its fields replaced by accessors, so a subclass of one
(``gpu.func``, ``arith.cmpi``) declares them again.
"""
from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import VectorType
from xdsl.irdl import IRDLOperation, result_def, traits_def
from xdsl.traits import Pure


def like_fields(define: Callable, constraint, count: int) -> tuple:
    """``count`` fields of one kind and constraint, declared together:
    ``l1_hint, l2_hint, l3_hint = like_fields(opt_prop_def, StringAttr, 3)``."""
    return tuple(define(constraint) for _ in range(count))


class PureVectorOp(IRDLOperation):
    """A pure op with one vector ``result`` (declared after the op's own operands)."""

    result = result_def(VectorType)
    traits = traits_def(Pure())
