"""The few target facts a launch needs, without the target tables.

A process whose kernels come from the disk cache needs the narrow-row rule (a launch's
arrays select the per-lane kernel specialisation by it; the CPU device's flavour is
:mod:`.cpu_device`'s), but none of the tables in :mod:`.target`,
whose frozen dataclasses alone cost a warm first launch ~10 ms of CPU to create.
Nothing here is a copy of the tables: the numbers below are the LSC's 2D block message
rules, which ``target.Block2DLimits`` takes as its defaults (a target registered with
stricter limits is refused: ``catalog.register_target``); the target names are the
tables' own, read (loading them) only where a name must be checked.
"""
from __future__ import annotations

#: rows narrower than this (bytes) cannot be addressed by 2D block messages: arrays with
#: such rows get a kernel specialisation that reads and writes them per lane (the
#: default ``Block2DLimits.min_width_bytes``, no target's being larger)
NARROW_ROW_BYTES = 64
#: 8- and 16-bit rows whose byte length is not a multiple of this cannot be a 2D block
#: surface's width: such arrays are read and written per lane too
#: (``Block2DLimits.width_multiple_bytes``)
ROW_BYTES_MULTIPLE = 4
#: a 2D block surface's row pitch must be a multiple of this (bytes)
#: (``Block2DLimits.pitch_align_bytes``), and its first element aligned to
#: BASE_ALIGN_BYTES (``base_align_bytes``).  numpy arrays are copied into buffers that meet
#: both; device arrays, used in place, that do not get the per-lane specialisation
PITCH_ALIGN_BYTES = 16
BASE_ALIGN_BYTES = 64

def rows_need_per_lane(row_elems: int, itemsize: int) -> bool:
    """Whether rows of ``row_elems`` elements of ``itemsize`` bytes cannot be the width of a
    2D block surface on some target (too narrow, or 8/16-bit rows of a byte length that is
    not a multiple of ROW_BYTES_MULTIPLE: e.g. 37 x f16), so that arrays with such rows
    get the per-lane kernel specialisation (docs/decisions/018-per-lane-specialisation.md)."""
    row_bytes = row_elems * itemsize
    return row_bytes < NARROW_ROW_BYTES or (itemsize < ROW_BYTES_MULTIPLE and row_bytes % ROW_BYTES_MULTIPLE != 0)


def device_layout_needs_per_lane(shape: tuple, strides: tuple, itemsize: int, base_address: int | None) -> bool:
    """Whether a device array (used in place) of these extents and strides (elements) cannot
    be a 2D block surface although its rows could: its row pitch is no multiple of
    PITCH_ALIGN_BYTES (f16 rows of 100 elements, 200 bytes) or ``base_address`` (None where
    the runtime places the buffer, as pyopencl's) is not BASE_ALIGN_BYTES-aligned.  Such
    arrays get the per-lane specialisation too."""
    if not shape:
        return False
    if len(shape) > 1 and shape[-2] > 1 and (strides[-2] * itemsize) % PITCH_ALIGN_BYTES:
        return True
    if not slices_aligned(shape, strides, itemsize):
        return True
    return base_address is not None and base_address % BASE_ALIGN_BYTES != 0


def slices_aligned(shape: tuple, strides: tuple, itemsize: int) -> bool:
    """Whether every 2-D slice of an N-D array starts as aligned as its first element: the
    strides (elements) of its leading dimensions of more than one index are multiples of
    BASE_ALIGN_BYTES (a kernel tiles ``x[z, h]`` from ``base + z*stride0 + h*stride1``)."""
    return all(n <= 1 or (s * itemsize) % BASE_ALIGN_BYTES == 0 for n, s in zip(shape[:-2], strides[:-2]))


#: the facts of each target added at run time (``catalog.register_target``), as text: a
#: built-in target's facts are in the compiler's sources, which the kernel cache key
#: already stamps, but a registered one's are not, so its key part carries them
REGISTERED_FACTS: dict[str, str] = {}


def target_key_part(target: str) -> str:
    """The cache-key part of compile target ``target`` (``pvc``, ``cpu-pvc``,
    ``interpret-m4``...): its name, and the facts of a registered target it names, so that
    a registered target with other facts never reads another's kernels."""
    base = target.split("-", 1)[1] if target.startswith(("cpu-", "interpret-")) else target
    facts = REGISTERED_FACTS.get(base)
    return target if facts is None else f"{target}\n{facts}"

