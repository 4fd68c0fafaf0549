"""The reference interpreter: XeTile IR executed with numpy (docs/interpreter.md).

* :func:`interpret` runs a module's kernel on a grid with numpy arrays (in place);
* :func:`launch_jit` is a ``@jit`` launch under ``XETILE_INTERPRET=1`` or
  ``kernel.on("interpret")``;
* ops are implemented per dialect in ``ops_*.py`` and registered with
  :func:`~.core.impl`; :mod:`.memory` is the memory model, :mod:`.values` the values.
"""
from .core import IMPLS, impl
from .launch import build_module, interpret, interpret_requested, launch_jit
from .values import InterpreterError

__all__ = ["IMPLS", "InterpreterError", "build_module", "impl", "interpret", "interpret_requested", "launch_jit"]
