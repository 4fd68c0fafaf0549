"""The kernel ABI: how a compiled kernel's parameters map to launch arguments.

Codegen writes it, the runtime reads it, the cache stores it as JSON.

An array parameter of rank R becomes these SPIR-V kernel parameters, in order:
``ptr addrspace(1)`` to the first element, then R ``i64`` extents, then R-1 ``i64``
strides in elements for the outer dimensions (the innermost stride is 1).
A scalar parameter is one value of its type.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..dtypes import ARRAY_TYPES

#: element type name -> (numpy dtype name, bytes), for the types arrays can hold
ELEMENT_TYPES = {name: (t.numpy_name, t.bytes) for name, t in ARRAY_TYPES.items()}

#: the largest row count, row width in bytes and row pitch in bytes of an array the kernel
#: addresses through tiles: tile descriptors hold them (and block positions) as 32-bit
#: values, and positions beyond it saturate to it (codegen/coordinates.py)
MAX_TILED_EXTENT = 1 << 30


@dataclass(frozen=True)
class ArrayParam:
    name: str
    dtype: str
    ndim: int = 2
    written: bool = True
    kind: str = "array"
    #: whether the kernel reads or writes this array with 2D block messages (then its rows
    #: must be ``min_width_bytes`` wide and its pitch ``pitch_align_bytes``-aligned); arrays
    #: reached only through per-lane (scattered, column, SLM) accesses have no such limits
    block2d: bool = True
    #: whether the kernel addresses this array through tiles (2-D descriptors, whose
    #: extents must not exceed ``MAX_TILED_EXTENT``); scattered tiles use 64-bit offsets
    tiled: bool = True


@dataclass(frozen=True)
class ScalarParam:
    name: str
    dtype: str
    kind: str = "scalar"


@dataclass(frozen=True)
class KernelABI:
    """What the runtime needs to launch one compiled kernel."""

    kernel_name: str
    params: tuple = ()
    subgroup_size: int = 16
    workgroup_size: int = 16          # work items per workgroup (dimension 0)
    pitch_align_bytes: int = 1        # row pitch the kernel's 2D block messages need
    min_width_bytes: int = 0          # narrowest row the kernel's 2D block messages accept
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(data: dict) -> "KernelABI":
        params = tuple(ArrayParam(**p) if p["kind"] == "array" else ScalarParam(**p) for p in data["params"])
        rest = {k: v for k, v in data.items() if k != "params"}
        return KernelABI(params=params, **rest)
