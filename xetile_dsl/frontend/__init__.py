"""Frontend: a ``@jit`` function's AST -> verified XeTile IR.

:func:`~xetile_dsl.frontend.build.build_module` is the entry point the compiler and the
interpreter use; :func:`xetile_dsl.compiler.to_xetile` wraps it for a signature written as
text, to inspect the IR a kernel produces.  The package itself imports nothing, so that
``jit`` can use :mod:`.source` and :mod:`.argspec` without loading xDSL."""
