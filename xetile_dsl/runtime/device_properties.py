"""``xetile_dsl.device_properties()``: what a launch's device offers, for sizing grids.

    props = xd.device_properties()
    grid = (min(tiles, props.xe_cores),)          # or props["multiprocessor_count"]

The facts come from the compile target's description (``xetile_dsl/targets/``) and,
for a GPU, from the runtime's own answers (dpctl or pyopencl: compute units, local
memory, workgroup and subgroup sizes), which win where given.  On the CPU device the
kernels are a GPU flavour's code (``cpu-pvc``, ``cpu-arc``): the properties are that
emulated target's facts and ``emulated`` is True -- the CPU's own cores are not what a
kernel written for the GPU should size its grid by.

Keys (attributes, also readable as ``props["name"]``; :meth:`DeviceProperties.as_dict`):

=============================  ===========================================================
``target``                     the compile target launches use (``pvc``, ``cpu-arc``, ...)
``device``                     the device's name (None when only a target was asked for)
``emulated``                   True on the CPU device: every number is the emulated GPU's
``subgroup_size``              lanes per subgroup the kernels are compiled for
``subgroup_sizes``             the subgroup sizes the device supports
``xe_cores``                   Xe cores (Triton's ``multiprocessor_count``)
``eus_per_xe_core``            vector engines (EUs) per Xe core
``eu_count``                   vector engines in all (OpenCL's compute units on Intel GPUs)
``slm_bytes``                  shared local memory per workgroup (Triton's ``max_shared_mem``)
``max_workgroup_size``         work items per workgroup (``max_work_group_size``)
``max_subgroups``              subgroups per workgroup: the largest ``num_warps``
                               (``max_num_sub_groups``)
``source``                     ``"runtime"`` (the GPU answered) or ``"target"`` (the table)
=============================  ===========================================================

Triton-style aliases: ``multiprocessor_count``, ``max_shared_mem``,
``max_work_group_size``, ``max_num_sub_groups``, ``sub_group_sizes``, ``warp_size``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..errors import UsageError
from ..targets import cpu_device
from ..targets.catalog import compile_target
from . import devices

#: Triton's and Intel XPU Triton's key names -> ours
ALIASES = {"multiprocessor_count": "xe_cores", "max_shared_mem": "slm_bytes",
           "max_work_group_size": "max_workgroup_size", "max_num_sub_groups": "max_subgroups",
           "sub_group_sizes": "subgroup_sizes", "warp_size": "subgroup_size"}


@dataclass(frozen=True)
class DeviceProperties:
    """The properties of one device and its compile target (module docstring)."""

    target: str
    device: str | None
    emulated: bool
    subgroup_size: int
    subgroup_sizes: tuple[int, ...]
    xe_cores: int
    eus_per_xe_core: int
    eu_count: int
    slm_bytes: int
    max_workgroup_size: int
    max_subgroups: int
    source: str

    def __getitem__(self, key: str):
        name = ALIASES.get(key, key)
        if name not in self.__dataclass_fields__:
            raise KeyError(f"{key!r}: the device properties are {', '.join(self.__dataclass_fields__)} "
                           f"(and Triton's {', '.join(ALIASES)})")
        return getattr(self, name)

    def keys(self):
        return self.__dataclass_fields__.keys()

    def as_dict(self) -> dict:
        """Every property by its own name."""
        return asdict(self)


def device_properties(device=None, target: str | None = None) -> DeviceProperties:
    """The properties of ``device`` (None: the default device, as a launch picks it; a
    selector string such as ``"opencl:cpu"``; or a :class:`~.devices.Device`), for the
    target its launches compile for, or for ``target`` when given (``"pvc"``,
    ``"cpu-arc"``: the table's facts, no device is opened).

    Example::

        props = xd.device_properties()
        programs = min(num_tiles, props["multiprocessor_count"])
    """
    if target is not None:
        if device is not None:
            raise UsageError("device_properties: give a device or a target, not both")
        resolved = compile_target(target)
        return _from_target(resolved.name, resolved.gpu, None, resolved.emulate)
    dev = device if isinstance(device, devices.Device) else devices.get_device(device)
    if dev.kind == "cpu":
        flavour = cpu_device.flavour()
        resolved = compile_target(f"cpu-{flavour}")
        return _from_target(resolved.name, resolved.gpu, dev.name, True)
    resolved = compile_target(dev.target_name)
    return _from_runtime(_from_target(resolved.name, resolved.gpu, dev.name, False), dev.native)


def _from_target(name: str, gpu, device: str | None, emulated: bool) -> DeviceProperties:
    """The target table's facts."""
    return DeviceProperties(
        target=name, device=device, emulated=emulated, subgroup_size=gpu.subgroup_size,
        subgroup_sizes=(gpu.subgroup_size,), xe_cores=gpu.xe_cores, eus_per_xe_core=gpu.eus_per_xe_core,
        eu_count=gpu.xe_cores * gpu.eus_per_xe_core, slm_bytes=gpu.slm_bytes,
        max_workgroup_size=gpu.max_workgroup_size, max_subgroups=gpu.max_workgroup_size // gpu.subgroup_size,
        source="target")


def _from_runtime(table: DeviceProperties, native) -> DeviceProperties:
    """``table`` with what a GPU's runtime object (dpctl ``SyclDevice`` or pyopencl
    ``Device``) reports in its place; the compiled subgroup size stays the target's, and a
    workgroup is never reported larger than the target allows."""
    units = _query(native, "max_compute_units")
    slm = _query(native, "local_mem_size")
    largest = _query(native, "max_work_group_size")
    sizes = _query(native, "sub_group_sizes") or _query(native, "sub_group_sizes_intel")
    if not any(v is not None for v in (units, slm, largest, sizes)):
        return table
    eus = int(units) if units else table.eu_count
    largest = min(int(largest), table.max_workgroup_size) if largest else table.max_workgroup_size
    return DeviceProperties(
        target=table.target, device=table.device, emulated=False, subgroup_size=table.subgroup_size,
        subgroup_sizes=tuple(sorted(int(s) for s in sizes)) if sizes else table.subgroup_sizes,
        xe_cores=max(1, eus // table.eus_per_xe_core), eus_per_xe_core=table.eus_per_xe_core, eu_count=eus,
        slm_bytes=int(slm) if slm else table.slm_bytes, max_workgroup_size=largest,
        max_subgroups=largest // table.subgroup_size, source="runtime")


def _query(native, name: str):
    """One property of a runtime device object, None where it has none or fails."""
    try:
        return getattr(native, name, None)
    except Exception:  # noqa: BLE001 - an OpenCL error for a query the device does not answer
        return None
