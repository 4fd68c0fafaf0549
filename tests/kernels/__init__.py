"""Kernels written for the tests (transposes, scattered tiles, index vectors, fused
epilogues, a hand-written chunked-scatter XeGPU module): each exercises one behaviour of
the compiler across the stage folders. The library's own kernels and the RFC appendix
programs stay in ``xetile_dsl/kernels``."""
