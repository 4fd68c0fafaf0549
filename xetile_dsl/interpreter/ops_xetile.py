"""XeTile ops (the XeTile RFC) on numpy values.

Workgroup-level IR (ops and tiles with ``wg_map``) runs as written: a ``wg_map`` only
says how the lowering distributes a workgroup tile among subgroups, never what the
values are, so whole-workgroup numpy operations give the results every distribution
must reproduce.  ``tile_conv_layout`` is therefore the identity.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..dialects import xetile
from ..dtypes import numpy_is_float, numpy_kind
from . import memory
from .engine import Run, impl, prop
from .memory import ArrayRef
from .ops_arith import result_dtype
from .programs import pass_turn
from .values import InterpreterError, TileValue, cast, np_dtype, pack, round_tf32, unpack, unsigned_dtype


# ----------------------------------------------------------------------------- tiles
@impl(xetile.InitTileOp)
def _init_tile(run: Run, op, source, *rest):
    ttype = op.tile.type
    dtype = np_dtype(ttype.element_type)
    shape = tuple(ttype.get_shape())
    if len(shape) == 1:
        shape = (1, shape[0])
    n_off, n_sizes = len(op.offsets), len(op.sizes)
    offsets, sizes, strides = rest[:n_off], rest[n_off:n_off + n_sizes], rest[n_off + n_sizes:]
    alloc, base, ref_sizes, ref_strides = _base(run, source, dtype)
    attr = ttype.attr
    if attr.is_scattered:
        offs = np.asarray(offsets[0], np.int64).reshape(shape)
        return TileValue(alloc, base, shape, dtype, element_offsets=offs)
    sizes = tuple(int(s) for s in sizes) or ref_sizes
    strides = tuple(int(s) for s in strides) or ref_strides
    if sizes is None:
        raise InterpreterError("init_tile on an address needs sizes and strides")
    return TileValue(alloc, base, shape, dtype, tuple(int(o) for o in offsets), sizes, strides, attr.blocks)


def _base(run: Run, source, dtype: np.dtype):
    """(allocation, element index of the base, sizes, strides) of an init_tile source."""
    if isinstance(source, ArrayRef):
        if source.dtype != dtype:
            raise InterpreterError(f"init_tile: the array holds {source.dtype}, the tile {dtype}")
        return source.alloc, source.offset, tuple(source.sizes), tuple(source.strides)
    alloc, index = run.memory.element_index(int(source), dtype)
    return alloc, index, None, None


def _padding(op):
    pad = prop(op, "padding")
    if pad is None:
        return 0
    value = getattr(pad, "value", pad)
    return getattr(value, "data", value)


def _as_2d(tile: TileValue, value) -> np.ndarray:
    value = np.asarray(value)
    if value.ndim == 4:
        return unpack(value)
    return value.reshape(tile.shape)


def _shaped(op, value: np.ndarray, tile: TileValue) -> np.ndarray:
    """``value`` in the op's result shape (4-D when the tile has inner_blocks, 1-D tiles)."""
    shape = tuple(op.results[0].type.get_shape())
    if len(shape) == 4:
        return pack(value, shape[2:])
    return value.reshape(shape)


@impl(xetile.LoadTileOp)
def _load_tile(run: Run, op, tile: TileValue):
    return _shaped(op, memory.load(tile, _padding(op)), tile)


@impl(xetile.StoreTileOp)
def _store_tile(run: Run, op, value, tile: TileValue):
    memory.store(tile, _as_2d(tile, value))


@impl(xetile.UpdateTileOffsetOp)
def _update(run: Run, op, tile: TileValue, dx, dy):
    if tile.scattered:
        raise InterpreterError("update_tile_offset on a scattered tile: create a new scattered tile instead")
    return tile.moved(dx, dy)


@impl(xetile.LoadGatherOp)
def _load_gather(run: Run, op, tile: TileValue, mask):
    value = memory.load(tile, _padding(op), np.asarray(mask, bool).reshape(tile.shape))
    return value.reshape(tuple(op.results[0].type.get_shape()))


@impl(xetile.StoreScatterOp)
def _store_scatter(run: Run, op, value, tile: TileValue, mask):
    memory.store(tile, np.asarray(value).reshape(tile.shape), np.asarray(mask, bool).reshape(tile.shape),
                 what="store_scatter")


def _umax(a, b):
    return _unsigned(np.maximum, a, b)


def _umin(a, b):
    return _unsigned(np.minimum, a, b)


def _unsigned(fn, a, b):
    a, b = np.asarray(a), np.asarray(b)
    u = unsigned_dtype(a.dtype)
    return fn(a.astype(u), b.astype(u)).astype(a.dtype)


_ATOMIC = {
    "addf": np.add, "addi": np.add, "mulf": np.multiply, "muli": np.multiply, "assign": lambda old, v: v,
    "maximumf": np.maximum, "minimumf": np.minimum, "maxnumf": np.fmax, "minnumf": np.fmin,
    "maxs": np.maximum, "mins": np.minimum, "maxu": _umax, "minu": _umin,
    "ori": np.bitwise_or, "andi": np.bitwise_and, "xori": np.bitwise_xor,
}


def _mask_of(mask, tile: TileValue):
    return None if mask is None else np.asarray(mask, bool).reshape(tile.shape)


@impl(xetile.AtomicRMWOp)
def _atomic_rmw(run: Run, op, value, tile: TileValue, *rest):
    mask = rest[0] if op.mask is not None else None
    if op.cmp is not None:  # compare-and-swap: an element equal to its cmp becomes its value
        old = memory.atomic_rmw(tile, _as_2d(tile, value), None, _mask_of(mask, tile), _as_2d(tile, rest[-1]))
        pass_turn(run, op, True)
        return _shaped(op, old, tile)
    combine = _ATOMIC[op.kind.data]

    def safe(old, v):
        with np.errstate(all="ignore"):
            return combine(old, v)

    old = memory.atomic_rmw(tile, _as_2d(tile, value), safe, _mask_of(mask, tile))
    pass_turn(run, op, True)
    return _shaped(op, old, tile)


# ----------------------------------------------------------------------------- tile_mma
@impl(xetile.TileMMAOp)
def _tile_mma(run: Run, op, a, b, c=None):
    out_shape = tuple(op.output.type.get_shape())
    blocked = len(out_shape) == 4
    if blocked:
        a, b = unpack(np.asarray(a)), unpack(np.asarray(b))
        c = unpack(np.asarray(c)) if c is not None else None
    d = mma(np.asarray(a), np.asarray(b), c, result_dtype(op))
    return pack(d, out_shape[2:]) if blocked else d


def mma(a: np.ndarray, b: np.ndarray, c, out: np.ndarray) -> np.ndarray:
    """``a @ b (+ c)`` as the matrix engine computes it.

    Float inputs (f16, bf16; f32 is rounded to tf32 first) are multiplied exactly and
    summed in f64, then rounded once to the accumulator type; integer inputs (i8/u8)
    accumulate exactly and wrap to the accumulator's width."""
    if numpy_kind(a.dtype) in "iu":
        acc = a.astype(np.int64) @ b.astype(np.int64)
        if c is not None:
            acc = acc + np.asarray(c, np.int64)
        return cast(acc, out)
    if a.dtype == np.float32:
        a, b = round_tf32(a), round_tf32(b)
    acc = a.astype(np.float64) @ b.astype(np.float64)
    if c is not None:
        acc = acc + np.asarray(c, np.float64)
    return cast(acc, out)


# ----------------------------------------------------------------------------- vector ops
def reduce_kind(kind: str, values: np.ndarray, axis, keepdims: bool = True):
    """vector.multi_reduction's combining ``kind`` over ``axis``; float sums and products
    are computed in f64 and rounded once by the caller."""
    values = np.asarray(values)
    if numpy_is_float(values.dtype):
        wide = values.astype(np.float64)
    elif numpy_kind(values.dtype) in "iu" and kind in ("add", "mul"):
        wide = values.astype(np.uint64 if numpy_kind(values.dtype) == "u" else np.int64)
    else:
        wide = values
    if kind in ("minui", "maxui"):
        wide = values.astype(unsigned_dtype(values.dtype))
    fn = {
        "add": np.sum, "mul": np.prod, "minsi": np.min, "minui": np.min, "maxsi": np.max, "maxui": np.max,
        "minnumf": np.nanmin, "maxnumf": np.nanmax, "minimumf": np.min, "maximumf": np.max,
        "and": np.bitwise_and.reduce, "or": np.bitwise_or.reduce, "xor": np.bitwise_xor.reduce,
    }.get(kind)
    if fn is None:
        raise InterpreterError(f"unknown reduction kind {kind!r}")
    with np.errstate(all="ignore"), _quiet_nan():
        return fn(wide, axis=axis, keepdims=keepdims)


class _quiet_nan:  # noqa: N801 - a context manager used like np.errstate
    """nanmin/nanmax warn on all-NaN slices; the result (NaN) is what maxnumf defines."""

    def __enter__(self):
        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


@impl(xetile.TileReduceOp)
def _tile_reduce(run: Run, op, value):
    dims = tuple(int(d) for d in op.reduction_dims.get_values())
    return cast(reduce_kind(op.kind.data, value, axis=dims), result_dtype(op))


@impl(xetile.TileBroadcastOp)
def _tile_broadcast(run: Run, op, value):
    return np.broadcast_to(np.asarray(value), tuple(op.result.type.get_shape())).copy()


@impl(xetile.TileTransposeOp)
def _tile_transpose(run: Run, op, value):
    return np.transpose(np.asarray(value), tuple(int(p) for p in op.permutation.get_values())).copy()


@impl(xetile.TilePackOp)
def _tile_pack(run: Run, op, value):
    return pack(np.asarray(value), tuple(int(b) for b in op.inner_blocks.get_values()))


@impl(xetile.TileUnpackOp)
def _tile_unpack(run: Run, op, value):
    return unpack(np.asarray(value))


@impl(xetile.TileConvLayoutOp)
def _tile_conv_layout(run: Run, op, value):
    return value


__all__ = ["mma", "reduce_kind"]
