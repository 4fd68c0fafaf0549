"""The kernel language: types and the tile operations a ``@jit`` function may call.

These functions are never executed by the compiler: the frontend reads the kernel's AST
and recognises calls to them by identity (each carries ``__xetile_builtin__``).  Calling
one outside a kernel raises an error that says so.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..dtypes import ELEMENT_TYPES, element
from ..errors import OutsideKernelError, UsageError


class constexpr:  # noqa: N801 - lower case, like Triton's tl.constexpr
    """Annotation for a kernel parameter whose value is known at compile time.

    ``def k(a, BM: xt.constexpr): ...`` -- the kernel is specialised (and cached) per value."""

    def __init__(self, value=None):
        self.value = value

    def __repr__(self) -> str:
        return f"constexpr({self.value!r})"


@dataclass(frozen=True)
class dtype:  # noqa: N801
    """An element type of tiles and arrays (``xt.float16``, ``xt.bfloat16`` ...)."""

    name: str

    @property
    def is_float(self) -> bool:
        return element(self.name).is_float

    @property
    def is_int(self) -> bool:
        return not self.is_float

    @property
    def bits(self) -> int:
        return element(self.name).bits

    def __repr__(self) -> str:
        known = ELEMENT_TYPES.get(self.name)
        return f"xt.{known.language_name if known else self.name}"


float16 = dtype("f16")
bfloat16 = dtype("bf16")
float32 = dtype("f32")
tfloat32 = dtype("tf32")
float8_e4m3fn = dtype("f8e4m3fn")   # OCP e4m3: max 448, no inf, NaN 0x7f/0xff
float8_e5m2 = dtype("f8e5m2")       # OCP e5m2: max 57344, inf and NaN
int8 = dtype("i8")
uint8 = dtype("u8")
int32 = dtype("i32")
uint32 = dtype("u32")
int64 = dtype("i64")
int1 = dtype("i1")


@dataclass(frozen=True)
class wg_map:  # noqa: N801 - lower case, like the RFC's attribute
    """How a workgroup-level tile is split among the workgroup's subgroups (the XeTile
    RFC's ``#xetile.wg_map``): ``sg_layout`` subgroups in a grid (ids row-major),
    each owning ``sg_data`` elements, dealt round-robin; when ``sg_layout * sg_data``
    exceeds the tile the assignment wraps around and subgroups share data.  Usable as a
    global or inside a kernel::

        MP_A = xt.wg_map(sg_layout=[8, 4], sg_data=[32, 32])
        ta = xt.init_tile(a, [m, 0], [256, 32], wg_map=MP_A)
    """

    sg_layout: tuple
    sg_data: tuple

    def __post_init__(self):
        for field_name in ("sg_layout", "sg_data"):
            value = tuple(getattr(self, field_name))
            if len(value) != 2 or any(not isinstance(v, int) or v <= 0 for v in value):
                raise UsageError(f"wg_map {field_name} must be two positive integers, got {list(value)}")
            object.__setattr__(self, field_name, value)

    @property
    def num_subgroups(self) -> int:
        return self.sg_layout[0] * self.sg_layout[1]


wg_map.__xetile_constexpr_fn__ = True  # the frontend calls it at compile time


def builtin(fn):
    """Mark ``fn`` as a kernel-language operation the frontend lowers itself."""

    @functools.wraps(fn)
    def outside_kernel(*args, **kwargs):
        raise OutsideKernelError(f"xetile_dsl.language.{fn.__name__} can only be called inside a @xetile_dsl.jit "
                           f"kernel (or with XETILE_INTERPRET=1)")

    outside_kernel.__xetile_builtin__ = fn.__name__
    return outside_kernel


@builtin
def program_id(axis):
    """Index of this workgroup along grid ``axis`` (0, 1 or 2).

    Example: ``pid_m = xt.program_id(0)``"""


@builtin
def num_programs(axis):
    """Number of workgroups along grid ``axis``. Example: ``n = xt.num_programs(1)``"""


@builtin
def subgroup_id():
    """Index of this subgroup within its workgroup. Example: ``sg = xt.subgroup_id()``"""


@builtin
def num_subgroups():
    """Number of subgroups in a workgroup. Example: ``n = xt.num_subgroups()``"""


def cdiv(a, b):
    """``ceil(a / b)`` for integers: the number of ``b``-sized blocks covering ``a``.

    Plain Python outside kernels (grids: ``(xt.cdiv(M, BM), xt.cdiv(N, BN))``); inside a
    kernel it takes constexprs (folded at compile time) or index values (``(a + b - 1) //
    b``, the same for ``b > 0``)."""
    if not all(isinstance(v, int) for v in (a, b)):
        raise UsageError(f"cdiv({a!r}, {b!r}): ceil division takes integers")
    if b == 0:
        raise UsageError(f"cdiv({a!r}, 0): division by zero")
    return -(-a // b)


cdiv.__xetile_builtin__ = "cdiv"  # inside kernels the frontend builds it (frontend/scalars.py)


@builtin
def barrier():
    """Wait until every subgroup of the workgroup gets here (``gpu.barrier``); memory
    operations before it are visible to the workgroup after it. Example: ``xt.barrier()``"""


@builtin
def slm_alloc(shape, dtype):
    """A 2-D buffer of ``shape`` x ``dtype`` (constexprs) in the workgroup's shared local
    memory (``memref.alloc`` in memory space 3), shared by all subgroups of the workgroup.
    View it with ``init_tile`` (offsets, ``wg_map``) like an array; separate writers and
    readers with ``xt.barrier()``. Example: ``a_slm = xt.slm_alloc([256, 128], xt.float16)``"""


@builtin
def init_tile(base, offsets, shape=None, order=(1, 0), wg_map=None):
    """A tile of ``shape`` (constexprs) over the 2-D array ``base`` at ``offsets`` (rows, cols),
    or over the 1-D array ``base`` at ``[offset]`` with ``shape`` ``[BLOCK]`` (a 1-D tile:
    ``load_tile`` gives a 1-D value of BLOCK elements; elements past the array's end read
    as padding and are not written).

    ``order=(0, 1)`` views a row-major array as its transpose (column-major view: offsets
    and shape are in the transposed view). ``wg_map`` makes it a workgroup-level tile.
    With a tile value of integer element offsets instead of ``[row, col]`` (and no
    ``shape``), it is a *scattered* tile for ``load_gather``/``store_scatter``. Example::

        ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
        tbt = xt.init_tile(bt, [0, pid_n * BN], [BK, BN], order=(0, 1))   # B given as B^T
        ts = xt.init_tile(a, xt.arange(0, 16) * 2)                           # every other element
        tx = xt.init_tile(x, [pid * BLOCK], [BLOCK])                         # x is a 1-D array

    A rank-3 or rank-4 ``base`` takes as many offsets and extents as its rank, the
    leading extents 1: the tile is 2-D, on the slice the leading offsets select (the same
    as ``init_tile(base[z, h], [row, col], [BM, D])``; docs/decisions/026-nd-arrays.md)::

        tq = xt.init_tile(q, [z, h, pid_m * BM, 0], [1, 1, BM, D])         # q: [Z, H, N, D]
        tk = xt.init_tile(k[z, h], [0, 0], [BN, D])                         # k[z, h]: [N, D]
    """


@builtin
def load_tile(tile, padding=0, mask=None, other=None):
    """Load ``tile`` into a value; elements outside the array read as ``padding``.

    ``mask`` (a boolean tile value of the tile's shape, or broadcastable to it: a
    ``[1, BN]`` row such as ``xt.arange(0, BN) < n`` or a ``[BM, 1]`` column) selects the
    elements to keep; the others read as ``other`` (a number, a runtime scalar or a tile
    value broadcastable to the tile; default 0).  ``padding`` and ``other`` combine as: a
    masked-off element is ``other``, an element the mask keeps but outside the array is
    ``padding``.  The tile is still read with block messages (then a select), so a mask
    costs no per-lane loads. Example::

        va = xt.load_tile(ta)
        row = xt.load_tile(tx, mask=xt.arange(0, BN) < n_cols, other=float("-inf"))
    """


@builtin
def store_tile(value, tile, mask=None):
    """Store ``value`` into the memory ``tile`` covers (out-of-bounds elements are dropped).

    With ``mask`` (a boolean tile value of the tile's shape, or broadcastable to it),
    elements whose mask is false are not written: their memory is left untouched, never
    read, modified and written back, so programs writing neighbouring elements do not
    race.  A row edge mask (``rows + r0 < n``, ``rows`` an arange column) keeps the block
    store with fewer rows; other masks store per lane (not a ``tile_mma`` result: mask its
    rows only, ``offs_m[:, None] < M``; the tile's bounds drop columns past the array). Example::

        xt.store_tile(acc, xt.init_tile(c, [0, 0], [BM, BN]))
        xt.store_tile(v, tc, mask=xt.arange(0, BN) < n_cols)
    """


@builtin
def prefetch_tile(tile, locality=3):
    """Hint the hardware to bring ``tile`` into cache. ``locality`` (a constexpr, as in the
    XeTile RFC) says how close: 3 = keep in every level down to L1, 2 = L2 (and L3) only,
    1 = L3 only, 0 = no reuse (streamed). Example: ``xt.prefetch_tile(ta, locality=2)``"""


@builtin
def update_tile_offset(tile, row_delta, col_delta=None):
    """``tile`` moved by (row_delta, col_delta) elements; a tile of a 1-D array moves by
    one delta, and a tile of an N-D array's slice moves within the slice (its last
    two dimensions).

    Example: ``ta = xt.update_tile_offset(ta, 0, BK)``; 1-D: ``tx = xt.update_tile_offset(tx, BLOCK)``"""


@builtin
def tile_mma(a, b, c=None, input_precision=None, wg_map=None):
    """``a @ b (+ c)``; f16/bf16 inputs accumulate in f32, int8/uint8 inputs in i32.

    f32 inputs are multiplied on the matrix engine in tf32 (PVC), also spelled
    ``input_precision="tf32"``. ``wg_map`` distributes the workgroup-level result among
    subgroups; the operands' maps are derived from it (RFC rules). Example::

        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
    """


@builtin
def atomic_rmw(kind, value, tile, mask=None, sem="acq_rel", scope="device"):
    """Atomically combine ``value`` into the memory of ``tile``; returns the old values.

    ``kind`` is "add", "max", "min", "mul", "and", "or", "xor", "xchg" (also spelled
    "assign"), or an arith atomic kind such as "addf". Integers (int32, uint32, int64) take
    every kind; floats (f32, f16, bf16) add, max, min, mul and xchg (see each target's
    ``atomic_float_add`` for which adds are one hardware atomic; the rest are a
    compare-exchange loop). On a scattered tile, lanes whose ``mask`` is false, and lanes
    whose element offset lies outside the array (negative, or past its last element),
    touch no memory and return 0 as their old value. Example:
    ``xt.atomic_rmw("add", partial, xt.init_tile(c, [0, 0], [8, 16]))``

    Array form: an array and an index list in place of the tile and mask,
    ``old = xt.atomic_rmw("add", 1, counter, [i])``, one atomic per program, the old
    element as a scalar (see ``xt.atomic_cas``). ``sem`` and ``scope``: the memory order
    (relaxed, acquire, release, acq_rel) and scope (workgroup, device), as in Triton."""


@builtin
def load_gather(tile, mask=None, padding=0):
    """Load a scattered tile; lanes whose ``mask`` is false read ``padding``, and so do
    lanes whose element offset lies outside the array (negative, or past its last element):
    gathers are bounds-checked like tiles.

    Example: ``v = xt.load_gather(xt.init_tile(a, offs), offs < n)``"""


@builtin
def store_scatter(value, tile, mask=None):
    """Store ``value`` through a scattered tile where ``mask`` is true; lanes whose element
    offset lies outside the array (negative, or past its last element) write nothing.

    Example: ``xt.store_scatter(v, xt.init_tile(c, offs), offs < n)``"""


@builtin
def tile_conv_layout(value, wg_map, source_wg_map=None):
    """Redistribute a workgroup-level value to the layout ``wg_map``.

    Example: ``v = xt.tile_conv_layout(v, xt.wg_map([4, 1], [8, 64]))``"""
