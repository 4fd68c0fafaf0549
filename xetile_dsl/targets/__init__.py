"""Target descriptions (see :mod:`xetile_dsl.targets.target`)."""
from .target import ARC, BMG, LNL, PTL, PVC, TARGETS, Block2DShape, DpasConfig, GemmTile, Target, get_target

__all__ = ["ARC", "BMG", "LNL", "PTL", "PVC", "TARGETS", "Block2DShape", "DpasConfig", "GemmTile", "Target", "get_target"]
