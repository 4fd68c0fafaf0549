"""The command line's subcommands that drive the whole compiler (``python -m xetile_dsl
explain``, ``opt``).  They sit above every stage; :mod:`xetile_dsl.tools` holds the
external-tool wrappers the stages themselves use (ocloc, iga64, spirv-val, zebin)."""
