"""The reference interpreter: XeTile IR executed with numpy (docs/interpreter.md).

* :func:`interpret` runs a module's kernel on a grid with numpy arrays (in place);
* :func:`launch_jit` is a ``@jit`` launch under ``XETILE_INTERPRET=1`` or
  ``kernel.on("interpret")``;
* ops are implemented per dialect in ``ops_*.py`` and registered with
  :func:`~.engine.impl`; :mod:`.memory` is the memory model, :mod:`.values` the values.
"""
from .._lazy import package_getattr
from .requested import INTERPRETER_TARGETS, interpret_requested

# the interpreter (xDSL, numpy op implementations) loads when first used (PEP 562)
__getattr__ = package_getattr(__name__, {
    "IMPLS": ".engine", "impl": ".engine", "build_module": ".launch", "interpret": ".launch", "launch_jit": ".launch",
    "InterpreterError": ".values"})

__all__ = ["INTERPRETER_TARGETS", "IMPLS", "InterpreterError", "build_module", "impl", "interpret", "interpret_requested", "launch_jit"]
