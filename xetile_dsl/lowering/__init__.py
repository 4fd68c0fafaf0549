"""The lowering: XeTile IR from the frontend -> SIMT XeGPU IR for codegen, as a list of passes.

Where things go:

* ``passes/``: the passes, one ``ModulePass`` per module (a pass with parts of its own is
  a package: ``passes/wg_to_sg/``); a new pass is listed in ``registry.py`` and
  ``pipeline.py``.
* ``analysis/``: read-only analyses and checks the passes ask (they change no IR).
* ``rewrites/``: IR rewrite helpers several passes call (not passes themselves).
* here: ``pipeline.py`` (the stages in order), ``registry.py`` (pass name -> class, for
  ``opt -p``) and ``notes.py`` (where the passes' warnings go).
"""
