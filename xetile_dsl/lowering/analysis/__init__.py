"""Read-only analyses and checks the passes ask (tile families, register and SLM estimates,
subgroup groups, element-wise classification, prefetch planning, unlowered-op checks,
the tile_mma operand shapes a target accepts): they read the IR and answer, or raise a
located error, and change nothing (an analysis may record its verdict as an attribute).
"""
