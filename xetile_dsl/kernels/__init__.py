"""Ready-made kernels written in the DSL (also the examples' and benchmarks' source)."""
