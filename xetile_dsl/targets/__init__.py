"""Target descriptions (see :mod:`xetile_dsl.targets.target`) and the names a user gives
them (:mod:`xetile_dsl.targets.catalog`).

The tables load at first use (PEP 562): a launch from the disk cache reads only
:mod:`.launch_facts` and :mod:`.cpu_device`, which do not need them."""
from .._lazy import package_getattr

_TABLES = ("ARC", "BMG", "LNL", "PTL", "PVC", "TARGETS", "Block2DLimits", "Block2DShape", "DpasConfig", "GemmTile",
           "OpTiles", "Target", "get_target")
_CATALOG = ("CompileTarget", "Registration", "as_target", "compile_target", "cpu_flavours", "kernel_target",
            "register_target", "target_aliases")

__getattr__ = package_getattr(__name__, {**{name: ".target" for name in _TABLES},
                                         **{name: ".catalog" for name in _CATALOG}})

__all__ = [*_TABLES, *_CATALOG]
