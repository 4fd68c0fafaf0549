"""The frontend's registry of kernel-language calls: a ``xetile_dsl.language`` function's
name (its ``__xetile_builtin__``) -> the function that builds its IR from the call.

Builders register with ``@LANGUAGE.register("zeros")`` (:mod:`.tile_ops`,
:mod:`.value_ops`); :class:`~.expressions.Expressions` finds the builder of a call with
one ``LANGUAGE.lookup(name)``.  It is the same :class:`~..op_registry.OpRegistry` the
interpreter and codegen register their ops with, keyed by name because a Python call has
no op class yet.
"""
from __future__ import annotations

from ..op_registry import OpRegistry

#: language function name -> ``builder(kernel_ir_builder, call_node)``
LANGUAGE = OpRegistry("frontend")

__all__ = ["LANGUAGE"]
