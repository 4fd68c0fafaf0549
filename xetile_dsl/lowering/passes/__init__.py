"""The lowering passes (each a ``ModulePass``), in pipeline order in ``lowering/pipeline.py``."""
