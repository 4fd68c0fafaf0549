"""The per-op emitters: one function per IR op class, ``(gen, op) -> None``, that writes
the op's LLVM IR with the driver's builder and records its result values.

``gen`` is the driver's :class:`~xetile_dsl.codegen.simt_to_llvm.KernelGen` (the LLVM
builder ``gen.b``, the value map ``gen.values`` / ``gen.v``, the builtins ``gen.lib``, the
target).  Every emitter module registers its functions in :data:`EMITTERS`::

    @EMITTERS.register(xegpu.LoadNdOp)
    def emit_load_nd(gen, op): ...

and :meth:`KernelGen.op <xetile_dsl.codegen.simt_to_llvm.KernelGen.op>` looks an op's
class up there; an op class has exactly one emitter (a choice between forms of one op,
e.g. a scalar or an element-wise ``arith.addi``, is made inside it).  What belongs here:
modules that emit ops (one module per family of ops), and the code-shape helpers only
they use (payloads hoisted out of loops, fragments kept in pieces).  The builtin
functions they call are in :mod:`xetile_dsl.codegen.builtins`.
"""
from __future__ import annotations

from ...op_registry import OpRegistry

#: op class -> its emitter ``(gen, op)``; filled by the modules of this folder when
#: they are imported (simt_to_llvm imports every one)
EMITTERS = OpRegistry("codegen")
