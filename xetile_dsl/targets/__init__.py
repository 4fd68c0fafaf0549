"""Target descriptions (see :mod:`xetile_dsl.targets.target`)."""
from .target import ARC, PVC, TARGETS, Block2DShape, DpasConfig, Target, get_target

__all__ = ["ARC", "PVC", "TARGETS", "Block2DShape", "DpasConfig", "Target", "get_target"]
