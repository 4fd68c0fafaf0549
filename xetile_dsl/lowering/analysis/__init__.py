"""Read-only analyses and checks the passes ask (tile families, register and SLM estimates,
subgroup groups, element-wise classification, prefetch planning, unlowered-op checks)."""
