"""The type of one kernel argument, as the launcher finds it and the compiler specialises on
(kept apart from the IR builder so that a launch served by the disk cache does not load it)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ArgSpec:
    """What one kernel argument is: an array (dtype, ndim) or a scalar (dtype)."""

    kind: str  # "array" | "scalar"
    dtype: str
    ndim: int = 0
    #: integer scalars: "1" (the value is 1, folded as a constant), "d16" (divisible by 16) or "";
    #: arrays: NARROW (rows narrower than NARROW_ROW_BYTES, accessed per lane) or ""
    spec: str = ""


#: the ArgSpec.spec of an array whose rows are too narrow for 2D block messages
NARROW = "narrow"
