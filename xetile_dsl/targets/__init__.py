"""Target descriptions (see :mod:`xetile_dsl.targets.target`) and the names a user gives
them (:mod:`xetile_dsl.targets.catalog`).

The tables load at first use (PEP 562): a launch from the disk cache reads only
:mod:`.launch_facts` and :mod:`.cpu_device`, which do not need them."""
from .._lazy import package_getattr

# each public name and the module defining it (a literal map: tests/structure reads it)
__getattr__ = package_getattr(__name__, {
    "ARC": ".target", "BMG": ".target", "LNL": ".target", "PTL": ".target", "PVC": ".target",
    "TARGETS": ".target", "Block2DLimits": ".target", "Block2DShape": ".target",
    "DpasConfig": ".target", "GemmTile": ".target", "OpTiles": ".target", "Target": ".target",
    "get_target": ".target", "CompileTarget": ".catalog", "Registration": ".catalog",
    "as_target": ".catalog", "compile_target": ".catalog", "cpu_flavours": ".catalog",
    "kernel_target": ".catalog", "register_target": ".catalog", "target_aliases": ".catalog",
})

__all__ = [
    "ARC", "BMG", "LNL", "PTL", "PVC", "TARGETS", "Block2DLimits", "Block2DShape", "DpasConfig",
    "GemmTile", "OpTiles", "Target", "get_target", "CompileTarget", "Registration", "as_target",
    "compile_target", "cpu_flavours", "kernel_target", "register_target", "target_aliases"]
