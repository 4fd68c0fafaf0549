"""Device discovery and selection.

Discovery order (the first usable device wins when nothing is asked for):

1. a Level Zero GPU, through dpctl;
2. an OpenCL GPU, through dpctl (or pyopencl);
3. Intel's OpenCL CPU runtime (``intel-opencl-rt``), through dpctl (or pyopencl).

Selection:

* ``get_device(selector=None, backend=None)``; ``selector`` defaults to the environment
  variable ``XETILE_DEVICE`` — ``"level_zero:gpu"``, ``"opencl:gpu"``, ``"opencl:cpu"``,
  optionally with an index (``"opencl:gpu:1"``), or just ``"gpu"`` / ``"cpu"``.
* ``backend`` defaults to ``XETILE_BACKEND`` (``"dpctl"`` or ``"pyopencl"``); without it
  dpctl is the first choice and pyopencl the fallback.  Level Zero needs dpctl.
* ``XETILE_TARGET`` (``"pvc"``, ``"bmg"``, ``"lnl"``, ``"ptl"``, ``"arc"``) overrides the
  compile target detected from a GPU's PCI device id, architecture or name
  (:func:`detect_target`; the tables are in ``xetile_dsl/targets/pci_ids.py``).

dpctl and pyopencl are imported lazily, after :func:`setup_intel_cpu_icd`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .. import knobs
from .._lazy import LazyModule
from ..errors import DeviceError
from .opencl_icd import setup_intel_cpu_icd

BACKENDS = ("dpctl", "pyopencl")
PLATFORMS = ("level_zero", "opencl")
KINDS = ("gpu", "cpu")
#: (platform, kind) in discovery order.
DISCOVERY_ORDER = (("level_zero", "gpu"), ("opencl", "gpu"), ("opencl", "cpu"))

# which GPU is which target: read only when a GPU is found (its regular expressions cost
# a process that launches on the CPU device ~1 ms to compile)
pci_ids = LazyModule("xetile_dsl.targets.pci_ids", globals())
#: the GPU targets' table (read only to check a name: a launch from the cache needs none)
target_tables = LazyModule("xetile_dsl.targets.target", globals())


# --- target detection -----------------------------------------------------------------

class UnsupportedTargetError(DeviceError):
    """An Intel GPU that is none of the known targets."""


def detect_target(name: str, device_id: int | None = None, architecture: str | None = None) -> str:
    """The compile target (one of the keys of ``targets.TARGETS``) of a
    GPU from what the runtime reports: its PCI ``device_id`` first, then its ``architecture`` name
    (SYCL's ``intel_gpu_bmg_g21``, an ocloc device name), then its ``name``.

    Raises :class:`UnsupportedTargetError` naming the closest target otherwise.
    """
    if not device_id:
        bracketed = re.search(r"\[0x([0-9a-fA-F]{4})\]", name)   # "Intel(R) Graphics [0x0bd5]"
        device_id = int(bracketed.group(1), 16) if bracketed else None
    found = (_target_of_id(device_id) if device_id else None) or _target_of_architecture(architecture)
    found = found or next((target for pattern, target in pci_ids.NAME_PATTERNS if pattern.search(name)), None)
    if found:
        return found
    for pattern, target, why in pci_ids.CLOSEST_TARGETS:
        if pattern.search(f"{name} {architecture or ''}"):
            ident = f" (device id 0x{device_id:04x})" if device_id else ""
            raise UnsupportedTargetError(
                f"GPU {name!r}{ident} is not a supported target ({', '.join(target_tables.TARGETS)}); the closest is "
                f"{target!r} ({why}). Set XETILE_TARGET={target} to try it.")
    raise AssertionError("unreachable")


def _target_of_id(device_id: int) -> str | None:
    """The target of a PCI device id: listed, else inside a family's id range."""
    listed = next((target for target, ids in pci_ids.PCI_DEVICE_IDS.items() if device_id in ids), None)
    return listed or next((target for mask, value, target in pci_ids.PCI_ID_RANGES if device_id & mask == value), None)


def _target_of_architecture(architecture: str | None) -> str | None:
    arch = (architecture or "").strip().lower()
    return next((target for prefix, target in pci_ids.ARCHITECTURE_PREFIXES if arch.startswith(prefix)), None) if arch else None


def target_override() -> str | None:
    """``XETILE_TARGET``, checked: a GPU target's name, or None when unset."""
    override = knobs.TARGET.get()
    if override is not None and override not in target_tables.TARGETS:
        raise DeviceError(f"XETILE_TARGET={override!r} is not a GPU target; use one of {', '.join(target_tables.TARGETS)}")
    return override


# --- the Device object ----------------------------------------------------------------

@dataclass
class Device:
    """One usable device: a native handle plus what the compiler needs to know."""

    name: str
    backend: str            # runtime API: "dpctl" or "pyopencl"
    platform: str           # "level_zero" or "opencl"
    kind: str               # "gpu" or "cpu"
    index: int = 0
    native: object = field(default=None, repr=False)   # dpctl.SyclDevice / pyopencl.Device
    device_id: int | None = None
    target_error: str | None = None
    _target: str | None = None

    @property
    def selector(self) -> str:
        """Selector string naming this device, e.g. ``"opencl:cpu:0"``."""
        return f"{self.platform}:{self.kind}:{self.index}"

    @property
    def target_name(self) -> str:
        """The GPU target ("pvc", "bmg", ...) of a GPU, "cpu" for the CPU; raises for an unknown GPU."""
        if self._target is None:
            raise UnsupportedTargetError(self.target_error or f"no target for {self.name!r}")
        return self._target

    def describe(self) -> str:
        """One human-readable line."""
        target = self._target or f"unsupported ({self.target_error})"
        return f"{self.selector:<18} {self.backend:<9} {self.name}  [target: {target}]"


def _make_device(name, backend, platform, kind, index, native, device_id=None, architecture=None) -> Device:
    dev = Device(name=name, backend=backend, platform=platform, kind=kind, index=index,
                 native=native, device_id=device_id)
    if kind == "cpu":
        dev._target = "cpu"
        return dev
    try:
        dev._target = target_override() or detect_target(name, device_id, architecture)
    except DeviceError as exc:
        dev.target_error = str(exc)
    return dev


# --- discovery per backend ------------------------------------------------------------

def _dpctl_devices(platform: str, kind: str) -> list[Device]:
    setup_intel_cpu_icd()
    import dpctl

    found = dpctl.get_devices(backend=platform, device_type=kind)
    return [_make_device(d.name, "dpctl", platform, kind, i, d) for i, d in enumerate(found)]


def _pyopencl_devices(platform: str, kind: str) -> list[Device]:
    if platform != "opencl":
        raise DeviceError("pyopencl reaches OpenCL devices only; Level Zero needs dpctl")
    setup_intel_cpu_icd()
    import pyopencl as cl

    cl_type = cl.device_type.GPU if kind == "gpu" else cl.device_type.CPU
    found = []
    for plat in cl.get_platforms():
        try:
            found += [d for d in plat.get_devices(device_type=cl_type) if "intel" in d.vendor.lower()]
        except cl.Error:
            continue
    return [_make_device(d.name, "pyopencl", platform, kind, i, d, _pci_id(d)) for i, d in enumerate(found)]


def _pci_id(cl_device) -> int | None:
    """The Intel PCI device id of a pyopencl device, when the driver reports it."""
    for attr in ("id_intel", "pci_device_id_intel"):
        try:
            return int(getattr(cl_device, attr))
        except Exception:  # noqa: BLE001 - attribute missing or query unsupported
            continue
    return None


_FINDERS = {"dpctl": _dpctl_devices, "pyopencl": _pyopencl_devices}


def _backend_order(backend: str | None) -> tuple[str, ...]:
    backend = backend or knobs.BACKEND.get()
    if backend is None:
        return BACKENDS
    if backend not in BACKENDS:
        raise DeviceError(f"unknown backend {backend!r} (XETILE_BACKEND); expected one of {', '.join(BACKENDS)}")
    return (backend,)


def _find(platform: str, kind: str, backends: tuple[str, ...]) -> tuple[list[Device], list[str]]:
    """Devices of one (platform, kind) from the first backend that has some, plus why-nots."""
    problems = []
    for backend in backends:
        if platform == "level_zero" and backend == "pyopencl" and len(backends) > 1:
            continue   # only dpctl reaches Level Zero; say so only when pyopencl was forced
        try:
            devs = _FINDERS[backend](platform, kind)
        except ImportError as exc:
            problems.append(f"{backend} not importable ({exc})")
            continue
        except DeviceError as exc:
            problems.append(f"{backend}: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 - driver errors become a report line
            problems.append(f"{backend}: {type(exc).__name__}: {exc}")
            continue
        if devs:
            return devs, problems
        problems.append(f"{backend} found no such device")
        if backend == "dpctl":
            break   # pyopencl reads the same OpenCL ICDs: asking it too would only cost its import
    return [], problems


def _label(platform: str, kind: str) -> str:
    return {"level_zero": "Level Zero", "opencl": "OpenCL"}[platform] + (" GPU" if kind == "gpu" else " CPU")


@dataclass
class DeviceReport:
    """What :func:`list_devices` saw: the devices, and what is missing and why."""

    devices: list[Device]
    missing: list[str]

    def __str__(self) -> str:
        lines = ["devices (discovery order):"]
        lines += [f"  {d.describe()}" for d in self.devices] or ["  (none)"]
        lines += [f"  {m}" for m in self.missing]
        return "\n".join(lines)


def list_devices(backend: str | None = None) -> DeviceReport:
    """All devices in discovery order, with a line for each kind that is missing."""
    backends = _backend_order(backend)
    devices, missing = [], []
    for platform, kind in DISCOVERY_ORDER:
        devs, problems = _find(platform, kind, backends)
        devices += devs
        if not devs:
            why = "; ".join(problems) or "not searched"
            if kind == "cpu" and setup_intel_cpu_icd() is None:
                why += "; intel-opencl-rt (libintelocl.so) is not installed (pip install intel-opencl-rt)"
            missing.append(f"no {_label(platform, kind)}: {why}")
    return DeviceReport(devices, missing)


def _parse_selector(selector: str) -> tuple[list[tuple[str, str]], int | None]:
    """Selector -> candidate (platform, kind) pairs and an optional index."""
    parts = selector.strip().lower().split(":")
    index = None
    if parts and parts[-1].isdigit():
        index = int(parts.pop())
    if len(parts) == 1 and parts[0] in KINDS:
        return [pk for pk in DISCOVERY_ORDER if pk[1] == parts[0]], index
    if len(parts) == 1 and parts[0] in PLATFORMS:
        return [pk for pk in DISCOVERY_ORDER if pk[0] == parts[0]], index
    if len(parts) == 2 and parts[0] in PLATFORMS and parts[1] in KINDS:
        return [(parts[0], parts[1])], index
    raise DeviceError(f"bad device selector {selector!r} (XETILE_DEVICE); expected e.g. "
                      "'level_zero:gpu', 'opencl:gpu', 'opencl:cpu', 'opencl:cpu:0', 'gpu' or 'cpu'")


_default: dict = {}


def get_device(selector: str | None = None, backend: str | None = None) -> Device:
    """The device named by ``selector`` (or ``XETILE_DEVICE``), else the first found.

    The result for the default (no selector, no environment) is cached per backend.
    """
    selector = selector or knobs.DEVICE.get()
    backends = _backend_order(backend)
    key = (selector, backends)
    if key in _default:
        return _default[key]
    candidates, index = _parse_selector(selector) if selector else (list(DISCOVERY_ORDER), None)
    problems = []
    for platform, kind in candidates:
        devs, why = _find(platform, kind, backends)
        if devs and (index or 0) < len(devs):
            _default[key] = devs[index or 0]
            return devs[index or 0]
        problems.append(f"no {_label(platform, kind)}"
                        + (f" with index {index} (found {len(devs)})" if devs else f": {'; '.join(why)}"))
    raise DeviceError(f"no device matches {selector or 'the default order'!r}: " + " | ".join(problems))


def device_of_queue(queue) -> Device:
    """The :class:`Device` a dpctl ``SyclQueue`` or a ``pyopencl.CommandQueue`` runs on."""
    if hasattr(queue, "sycl_device"):
        dev = queue.sycl_device
        platform = dev.backend.name
        platform = "level_zero" if "level_zero" in platform else platform
        return _make_device(dev.name, "dpctl", platform, "gpu" if dev.is_gpu else "cpu", 0, dev)
    import pyopencl as cl

    dev = queue.device
    kind = "gpu" if dev.type & cl.device_type.GPU else "cpu"
    return _make_device(dev.name, "pyopencl", "opencl", kind, 0, dev, _pci_id(dev))
