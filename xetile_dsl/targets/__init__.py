"""Target descriptions (see :mod:`xetile_dsl.targets.target`).

The tables load at first use (PEP 562): a launch from the disk cache reads only
:mod:`.launch_facts`, which does not need them."""
from .._lazy import package_getattr

__getattr__ = package_getattr(__name__, {name: ".target" for name in (
    "ARC", "BMG", "LNL", "PTL", "PVC", "TARGETS", "Block2DShape", "DpasConfig", "GemmTile", "Target", "get_target")})

__all__ = ["ARC", "BMG", "LNL", "PTL", "PVC", "TARGETS", "Block2DShape", "DpasConfig", "GemmTile", "Target", "get_target"]
