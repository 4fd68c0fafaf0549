"""Masks on block tiles: ``load_tile(t, mask=m, other=x)`` and ``store_tile(v, t, mask=m)``.

A masked load is the tile's block load (out-of-bounds elements read as ``padding``) and
one ``arith.select`` of the mask between it and ``other``: a masked-off element is
``other``, a kept element outside the array is ``padding``.  The load's messages do not
change, so a mask costs no per-lane reads.

A masked store whose mask is a row edge (``rows + r0 < n``: :mod:`.edge_masks`) stays the
block store with the tile's row extent shrunk to the rows it keeps.  Any other masked
store is predicated per lane: the block tile's elements become a scattered tile
(``init_tile`` of the linear element offsets ``row * row_stride + col * col_stride``) and
the store a ``store_scatter`` whose lanes are the mask and the tile's bounds (an element
outside the array is dropped, as a block store drops it).  Memory under a false mask is
never read nor written, so two programs masking out each other's elements of one row do
not race (a read-modify-write would).  The stored value is then blocked in one-row pieces
(the scatter's), and so is the load it is computed from, still read with 2D block
messages of several rows where the target has them (lowering/rewrites/block_messages.py
cuts the pieces out of them), not per lane.
A tile_mma result (directly, through element-wise ops or out of a loop) is not laid out
in one-row pieces, so such a store of one is refused here, in every flavour alike: mask
its rows only.
"""
from __future__ import annotations

import ast

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import MemRefType, i1, i32
from xdsl.ir import Operation, SSAValue

from ..dialects import _arith_vector as av
from ..dialects import _mixed, xetile
from ..dialects.types import is_float, type_name
from . import edge_masks
from . import semantic as sem
from .ir_values import INDEX, describe


def _given(builder, args: dict, name: str):
    """The value of argument ``name`` (its AST node visited), None when it is absent or
    ``None`` (also a constexpr None)."""
    arg = args.get(name)
    if arg is None or (isinstance(arg, ast.Constant) and arg.value is None):
        return None
    return builder.visit(arg)


def check_tile(builder, args, tile, op: str) -> None:
    """Masks apply to plain block tiles of subgroup level: located errors otherwise."""
    if tile.type.attr.is_scattered:
        other = "xt.load_gather(tile, mask, padding=...)" if op == "load_tile" else "xt.store_scatter(value, tile, mask)"
        raise builder.error(args["mask"], f"{op}: mask= on a scattered tile (init_tile(base, offsets)); a "
                            f"scattered tile is masked with {other}")
    if tile.type.attr.wg is not None:
        raise builder.error(args["mask"], f"{op}: mask= is not supported on a workgroup-level tile (wg_map=); "
                            f"mask a subgroup's tile (init_tile without wg_map)")


def _mask_value(builder, args, mask, shape, op: str) -> SSAValue:
    """The ``mask`` argument's value ``mask`` as an i1 vector of ``shape`` (size-1
    dimensions stretched)."""
    return sem.stretch(builder, _checked_mask(builder, args, mask, shape, op), shape, args["mask"])


def _checked_mask(builder, args, mask, shape, op: str) -> SSAValue:
    """The ``mask`` argument's value ``mask``, checked: a boolean tile value (a comparison
    result) of ``shape`` or broadcastable to it (a constant bool becomes a splat)."""
    node = args["mask"]
    if isinstance(mask, bool):
        return sem.constant(builder, int(mask), i1, shape)
    if not (sem.is_tile(mask) and sem.elem_of(mask) == i1):
        what = (f"a tile value of {sem.describe_type(sem.elem_of(mask))} elements, shape {list(sem.shape_of(mask))}"
                if sem.is_tile(mask) else describe(mask))
        raise builder.error(node, f"{op}: the mask must be a boolean tile value (a comparison such as "
                            f"xt.arange(0, N) < n), got {what}")
    mshape = tuple(sem.shape_of(mask))
    if len(mshape) != len(shape) or any(m not in (1, t) for m, t in zip(mshape, shape)):
        raise builder.error(node, f"{op}: a mask of shape {list(mshape)} does not fit the tile's "
                            f"{list(shape)}; give the tile's shape or one broadcastable to it ([1, "
                            f"{shape[-1]}] rows, [{shape[0]}, 1] columns)")
    return mask


def _other_value(builder, args, other, elem, shape) -> SSAValue:
    """The ``other`` argument's value ``other`` (None: 0) as a vector of ``elem`` and ``shape``."""
    node = args.get("other")
    if other is None:
        return sem.constant(builder, 0, elem, shape)
    if sem.is_const(other) and not isinstance(other, str):
        sem.check_fits(builder, other, elem, node, "load_tile: other")
        return sem.constant(builder, other, elem, shape)
    if isinstance(other, SSAValue) and (sem.is_scalar(other) or sem.is_tile(other)):
        src = sem.elem_of(other)
        if is_float(src) and not is_float(elem):
            raise builder.error(node, f"load_tile: other is a {type_name(src)} value but the tile holds "
                                f"{type_name(elem)}; convert it first (xt.astype)")
        if sem.is_tile(other):
            oshape = tuple(sem.shape_of(other))
            if len(oshape) != len(shape) or any(o not in (1, t) for o, t in zip(oshape, shape)):
                raise builder.error(node, f"load_tile: other of shape {list(oshape)} does not fit the tile's "
                                    f"{list(shape)}")
        return sem.coerce(builder, other, elem, shape, node)
    raise builder.error(node, f"load_tile: other must be a number (e.g. float(\"-inf\")), a runtime scalar or a "
                        f"tile value of the tile's element type, got {describe(other)}")


def load(builder, args, tile, block_load) -> SSAValue:
    """``load_tile``'s value: ``block_load()`` (the tile's load_tile), and with a mask
    ``select(mask, loaded, other)``, its masked-off elements replaced by ``other``."""
    mask, other = _given(builder, args, "mask"), _given(builder, args, "other")
    if mask is None:
        if other is not None:
            raise builder.error(args["other"], "load_tile: other= gives the value of masked-off elements and "
                                "needs a mask=; elements outside the array read as padding= (default 0)")
        return block_load()
    check_tile(builder, args, tile, "load_tile")
    shape = tuple(tile.type.get_shape())
    mask = _mask_value(builder, args, mask, shape, "load_tile")
    other = _other_value(builder, args, other, tile.type.element_type, shape)
    return builder.emit(av.SelectOp(mask, block_load(), other)).result


def store(builder, args, value: SSAValue, tile) -> bool:
    """With a mask, ``value`` stored through ``tile`` where it holds, one predicated lane
    per element (a ``store_scatter`` over the tile's elements; see the module docstring);
    returns False (nothing built) without one."""
    mask = _given(builder, args, "mask")
    if mask is None:
        return False
    check_tile(builder, args, tile, "store_tile")
    shape = tuple(tile.type.get_shape())
    mask = _checked_mask(builder, args, mask, shape, "store_tile")
    origin = _origin(builder, tile)
    along = 0 if tile.type.attr.order_list == (1, 0) else 1    # column-major: the memory rows are columns
    limits = edge_masks.row_limits(mask, along)
    if origin is not None and limits is not None and origin[0].sizes:
        clamped = edge_masks.clamp_rows(builder, origin[0], tile.type, origin[1], limits, along)
        builder.emit(xetile.StoreTileOp(value, clamped))  # a row edge: the block store, fewer rows
        return True
    if _from_tile_mma(value, set()):
        raise builder.error(args["mask"], "store_tile: this mask is no row edge, so it stores per lane in one-row "
                            "pieces, which a tile_mma result is not laid out in; mask only the rows (offs_m[:, None] "
                            "< M keeps the block store: columns past the array's end are already dropped) or store "
                            "it without a mask")
    lanes = builder.target.masked_store_lanes
    if shape[-1] % lanes:
        raise builder.error(args["mask"], f"store_tile: this mask is no row edge, so it stores per lane, one "
                            f"element per lane of {builder.target.name}'s {lanes}, which needs the tile's "
                            f"{shape[-1]} columns a multiple of {lanes}; make the tile {-(-shape[-1] // lanes) * lanes} "
                            f"columns wide (elements past the array's end are not written) or mask rows only")
    mask = sem.stretch(builder, mask, shape, args["mask"])
    if origin is None:
        raise builder.error(args["mask"], "store_tile: mask= needs a tile made by init_tile (possibly moved by "
                            "update_tile_offset); a tile carried through a loop (reassigned in it) or out of an "
                            "if cannot be masked yet: init_tile it inside the loop at its offsets")
    init, offsets = origin
    sizes, strides = _extents(builder, init)
    lanes, inside = [], mask
    for dim, (off, size, stride) in enumerate(zip(offsets, sizes, strides)):
        index = _iota(builder, shape, dim, off)  # the elements' row (dim 0) or column (dim 1)
        inside = builder.emit(arith.AndIOp(inside, _below(builder, index, size, shape))).result
        lanes.append(builder.emit(arith.MuliOp(index, sem.splat(builder, stride, shape))).result)
    linear = builder.emit(arith.AddiOp(*lanes)).result
    ttype = xetile.TileType(list(shape), tile.type.element_type,
                            xetile.TileAttr(scattered=True, memory_space=tile.type.attr.memory_space.data))
    scattered = builder.emit(xetile.InitTileOp(init.source, [linear], ttype)).tile
    builder.emit(xetile.StoreScatterOp(value, scattered, inside))
    return True


def _from_tile_mma(value: SSAValue, seen: set) -> bool:
    """Whether ``value`` is a tile_mma result, possibly through element-wise ops, conversions
    and the results of loops and ifs that yield one."""
    owner = value.owner
    if not isinstance(owner, Operation) or owner in seen:
        return False
    seen.add(owner)
    if isinstance(owner, xetile.TileMMAOp):
        return True
    if isinstance(owner, (scf.ForOp, scf.IfOp)):
        index = list(owner.results).index(value)
        return any(isinstance(y, scf.YieldOp) and _from_tile_mma(y.operands[index], seen)
                   for region in owner.regions for block in region.blocks for y in [block.last_op])
    shape = sem.shape_of(value)
    return any(sem.shape_of(v) == shape and _from_tile_mma(v, seen) for v in owner.operands)


def _origin(builder, tile: SSAValue):
    """The ``init_tile`` behind ``tile`` and the tile's current offsets (index values,
    built here: the init's offsets plus every ``update_tile_offset`` on the way), or None
    when the tile comes through a block argument (a loop or an ``if``)."""
    deltas = []
    owner = tile.owner
    while isinstance(owner, xetile.UpdateTileOffsetOp):
        deltas.append(_mixed.mixed(owner, owner.offset_values()))
        owner = owner.tile.owner
    if not isinstance(owner, xetile.InitTileOp) or owner.tile.type.attr.is_scattered:
        return None
    offsets = [_as_index(builder, v) for v in _mixed.mixed(owner, owner.offsets)]
    for delta in deltas:
        offsets = [builder.emit(arith.AddiOp(o, _as_index(builder, d))).result for o, d in zip(offsets, delta)]
    return owner, offsets


def _extents(builder, init: xetile.InitTileOp):
    """The tile's (view) extents and strides, as index values."""
    if init.sizes:
        return list(init.sizes), list(init.strides)
    src = init.source.type
    assert isinstance(src, MemRefType)
    rows, cols = src.get_shape()  # a static buffer (xt.slm_alloc): row-major
    sizes, strides = [rows, cols], [cols, 1]
    return [builder.index(v, None) for v in sizes], [builder.index(v, None) for v in strides]


def _as_index(builder, value) -> SSAValue:
    return builder.index(value, None) if isinstance(value, int) else value


def _iota(builder, shape, dim: int, start: SSAValue) -> SSAValue:
    """``start + i`` along dimension ``dim``, broadcast to ``shape`` (index elements)."""
    n = shape[dim]
    unit = (n, 1) if dim == 0 else (1, n)
    steps = sem.convert(builder, sem.dense(builder, list(range(n)), i32, unit), INDEX, None)
    index = builder.emit(arith.AddiOp(steps, sem.splat(builder, start, unit))).result
    return sem.stretch(builder, index, shape, None)


def _below(builder, index: SSAValue, size: SSAValue, shape) -> SSAValue:
    """``0 <= index < size`` in one unsigned compare (a negative index is huge unsigned)."""
    return builder.emit(av.CmpiOp(index, sem.splat(builder, size, shape), "ult")).result


__all__ = ["load", "store"]
