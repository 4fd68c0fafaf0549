"""The lowering passes, one ``ModulePass`` per module, in pipeline order in
``lowering/pipeline.py`` and listed in ``lowering/registry.py``.

A pass whose work splits into parts only it uses is a package named after the pass, the
pass class in its ``__init__.py`` and its parts beside it (``wg_to_sg/``). What several
passes share goes to ``lowering/rewrites/`` (IR rewrites) or ``lowering/analysis/``
(read-only analyses), not here.
"""
