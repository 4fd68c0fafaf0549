"""IR builders for the calls of ``xetile_dsl.language``: tiles, memory and program ids (one
``build_<name>`` per language function, registered in :data:`~.language_registry.LANGUAGE`)."""
from __future__ import annotations

import ast
import inspect
from functools import lru_cache

from xdsl.dialects import arith, gpu, memref
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, MemRefType, StringAttr, VectorType, i1, i32
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from ..dialects import _arith_vector as av
from ..dialects import xetile
from ..dialects.xetile import check_wg_map
from ..language import core as lang
from . import array_views, masks, one_d, ranks, table_entries
from . import semantic as sem
from .ir_values import INDEX, describe
from .language_registry import LANGUAGE
from ..dialects.types import ir_type, is_float, is_unsigned, type_name
from ..dtypes import FP8_TYPES

_DIMS = ("x", "y", "z")
SLM_SPACE = 3  #: memref memory space of shared local memory


def _bind(builder, node: ast.Call) -> dict[str, ast.AST]:
    """Map the stub's parameter names to the call's argument nodes (Python call rules)."""
    stub = builder.visit(node.func)
    sig = _signature(stub)
    if any(isinstance(a, ast.Starred) for a in node.args):
        raise builder.error(node, "*args are not supported in kernel calls")
    try:
        bound = sig.bind(*node.args, **{k.arg: k.value for k in node.keywords})
    except TypeError as exc:
        raise builder.error(node, f"{stub.__xetile_builtin__}(): {exc}") from None
    return dict(bound.arguments)


@lru_cache(maxsize=None)
def _signature(stub) -> inspect.Signature:
    """The language stub's signature, made once (``inspect.signature`` costs ~50 us, and
    the frontend binds every builtin call of a kernel)."""
    return inspect.signature(inspect.unwrap(stub))


def _axis(builder, node: ast.Call, arg: ast.AST) -> gpu.DimensionAttr:
    axis = builder.constexpr(arg, "the axis")
    if axis not in (0, 1, 2):
        raise builder.error(arg, f"axis must be 0, 1 or 2, got {axis!r}")
    return gpu.DimensionAttr(gpu.DimensionEnum(_DIMS[axis]))


@LANGUAGE.register("program_id")
def build_program_id(builder, node: ast.Call):
    args = _bind(builder, node)
    return builder.emit(gpu.BlockIdOp(_axis(builder, node, args["axis"]))).result


@LANGUAGE.register("num_programs")
def build_num_programs(builder, node: ast.Call):
    args = _bind(builder, node)
    return builder.emit(gpu.GridDimOp(_axis(builder, node, args["axis"]))).result


@LANGUAGE.register("subgroup_id")
def build_subgroup_id(builder, node: ast.Call):
    _bind(builder, node)
    return builder.emit(gpu.SubgroupIdOp()).result


@LANGUAGE.register("num_subgroups")
def build_num_subgroups(builder, node: ast.Call):
    _bind(builder, node)
    return builder.emit(gpu.NumSubgroupsOp()).result


@LANGUAGE.register("barrier")
def build_barrier(builder, node: ast.Call):
    """``xt.barrier()``: a workgroup barrier (``gpu.barrier``)."""
    _bind(builder, node)
    builder.emit(gpu.BarrierOp())


@LANGUAGE.register("slm_alloc")
def build_slm_alloc(builder, node: ast.Call):
    """``xt.slm_alloc(shape, dtype)``: a static ``memref.alloc`` in memory space 3 (SLM)."""
    shape, dt = _shape_and_dtype(builder, _bind(builder, node))
    if dt.name == "tf32":
        raise builder.error(node, "slm_alloc: use xt.float32 for f32 data (tf32 is a tile_mma input type)")
    mtype = MemRefType(ir_type(dt.name), shape, memory_space=IntegerAttr(SLM_SPACE, 64))
    buf = builder.emit(memref.AllocOp([], [], mtype)).memref
    builder.array_meta[buf] = ([], [])  # static: extents and strides come from the type
    return buf


def wg_map_attr(builder, arg: ast.AST | None):
    """The ``#xetile.wg_map`` of an ``xt.wg_map(...)`` constexpr (None when absent)."""
    if arg is None or _is_none(arg):
        return None
    value = builder.constexpr(arg, "wg_map")
    if not isinstance(value, lang.wg_map):
        raise builder.error(arg, f"expected an xt.wg_map(sg_layout=[..], sg_data=[..]), got {describe(value)}")
    if len(value.sg_layout) != 2 or len(value.sg_data) != 2:
        raise builder.error(arg, f"wg_map needs two sg_layout and two sg_data entries, got {value}")
    return xetile.WgMapAttr(value.sg_layout, value.sg_data)


def _int_pair(builder, arg: ast.AST, what: str, constexpr: bool, values=None):
    values = builder.visit(arg) if values is None else values
    if not isinstance(values, (list, tuple)) or len(values) != 2:
        raise builder.error(arg, f"{what} must be a list of two integers, got {describe(values)}")
    if constexpr and any(isinstance(v, SSAValue) or not isinstance(v, int) or v <= 0 for v in values):
        raise builder.error(arg, f"{what} must be two positive compile-time integers (constexprs), got {values}")
    return list(values)


@LANGUAGE.register("init_tile")
def build_init_tile(builder, node: ast.Call):
    args = _bind(builder, node)
    base = builder.visit(args["base"])
    if isinstance(base, table_entries.TableEntry):   # tab[g]: an entry's address, shape and strides
        return table_entries.init_tile(builder, node, args, base, _int_pair, _wg_map_arg)
    if not (isinstance(base, SSAValue) and isinstance(base.type, MemRefType)):
        raise builder.error(args["base"], f"init_tile needs an array argument as its base, got {describe(base)}")
    offsets = builder.visit(args["offsets"])
    if isinstance(offsets, SSAValue) and isinstance(offsets.type, VectorType):
        if array_views.rank_of(base) > 2:
            raise builder.error(args["base"], "a scattered tile's offsets count in a 2-D array: slice the "
                                f"{array_views.rank_of(base)}-D array first, xt.init_tile(x[z, h], offsets)")
        return _init_scatter_tile(builder, node, args, base, offsets)
    if one_d.is_1d_array(base):
        return one_d.init_tile_1d(builder, node, args, base, offsets)
    if "shape" not in args:
        raise builder.error(node, "init_tile needs a shape, e.g. init_tile(a, [row, col], [BM, BK])")
    shape = None
    if array_views.rank_of(base) > 2:   # offsets and shape of the rank: a tile of a 2-D slice
        base, offsets, shape = array_views.tile_of_nd(builder, base, offsets, builder.visit(args["shape"]), args)
    shape = _int_pair(builder, args["shape"], "the tile shape", constexpr=True, values=shape)
    offsets = [builder.index(v, args["offsets"])
               for v in _int_pair(builder, args["offsets"], "offsets", False, values=offsets)]
    order = tuple(builder.constexpr(args["order"], "order")) if "order" in args else (1, 0)
    if order not in ((1, 0), (0, 1)):
        raise builder.error(args["order"], f"order must be (1, 0) (row-major) or (0, 1) (column-major), got {order}")
    space = _memory_space(base)
    if space == SLM_SPACE and order != (1, 0):
        raise builder.error(args["order"], "a tile of an xt.slm_alloc buffer must be row-major: order=(1, 0)")
    sizes, strides = builder.array_meta[base]
    if order == (0, 1):  # the transposed view of a row-major array: swap extents, unit row stride
        sizes, strides = sizes[::-1], [strides[1], strides[0]]
    wg = _wg_map_arg(builder, args, shape, "init_tile")
    tile_type = xetile.TileType(shape, base.type.element_type,
                                xetile.TileAttr(order=order, wg_map=wg, memory_space=space))
    return builder.emit(xetile.InitTileOp(base, offsets, tile_type, sizes, strides)).tile


def _memory_space(base: SSAValue) -> int:
    """3 for an ``xt.slm_alloc`` buffer, 0 for global arrays."""
    space = base.type.memory_space
    return space.value.data if isinstance(space, IntegerAttr) else 0


def _init_scatter_tile(builder, node, args, base, offsets):
    if "shape" in args and not _is_none(args["shape"]):
        raise builder.error(args["shape"], "a scattered tile (offsets given as a tile value) takes its shape "
                            "from the offsets; drop the shape argument")
    if is_float(offsets.type.element_type):
        raise builder.error(args["offsets"], "scatter offsets must be integers (element offsets into the array)")
    given = offsets
    offsets = sem.convert(builder, offsets, INDEX, node)
    shape = list(offsets.type.get_shape())
    tile_type = xetile.TileType(shape, base.type.element_type,
                                xetile.TileAttr(scattered=True, memory_space=_memory_space(base)))
    tile = builder.emit(xetile.InitTileOp(base, [offsets], tile_type)).tile
    span = _span(builder, base)
    if given.type.element_type == i32:  # compared as given: no 64-bit compare (emulated on ARC)
        # v (sign-extended) < span  <=>  v <u min(span, 2**31) as i32, negatives being >= 2**31 unsigned
        limit = builder.emit(arith.MinUIOp(span, builder.index(2 ** 31, None))).result
        offsets, span = given, builder.emit(arith.IndexCastOp(limit, i32)).result
    builder.scatter_bounds[tile] = (offsets, span, _span(builder, base) if span.type == i32 else span)
    return tile


def carry_bounds(builder, names) -> list[str]:
    """Scattered tiles carried through a loop or out of an ``if`` keep their bounds: the
    lanes' offsets and the array's span travel with the tile as hidden carried values
    (``name.offsets``, ``name.span``, index-typed so that tiles of either offset width
    carry alike), set in ``builder.env`` from the tile's bounds; returns their names."""
    hidden = []
    for name in names:
        tile = builder.env.get(name)
        if not isinstance(tile, SSAValue) or tile not in builder.scatter_bounds:
            continue
        offsets, _, span = builder.scatter_bounds[tile]
        builder.env[name + ".offsets"] = sem.convert(builder, offsets, INDEX, None)
        builder.env[name + ".span"] = span
        hidden += [name + ".offsets", name + ".span"]
    return hidden


def bind_bounds(builder, names) -> None:
    """The tiles named in ``names`` (loop arguments or results, ``if`` results) get the
    bounds their hidden carried values (:func:`carry_bounds`) hold."""
    for name in names:
        offsets, span = builder.env.get(name + ".offsets"), builder.env.get(name + ".span")
        tile = builder.env.get(name)
        if offsets is not None and span is not None and isinstance(tile, SSAValue):
            builder.scatter_bounds[tile] = (offsets, span, span)


def _span(builder, base):
    """Elements of the array from its first element to its last: ``(rows - 1) * row_stride
    + cols`` (a scattered lane is inside when ``0 <= offset < span``)."""
    if one_d.is_1d_array(base):
        return one_d.scatter_span(builder, base)
    sizes, strides = builder.array_meta[base]
    if sizes:
        rows, cols = sizes
        pitch = strides[0]
    else:  # a static buffer (xt.slm_alloc): row-major, extents from the type
        rows, cols = (builder.index(n, None) for n in base.type.get_shape())
        pitch = cols
    one = builder.index(1, None)
    last_row = builder.emit(arith.SubiOp(rows, one)).result
    start = builder.emit(arith.MuliOp(last_row, pitch)).result
    return builder.emit(arith.AddiOp(start, cols)).result


def _with_bounds(builder, tile, args, shape, node):
    """``mask`` and the scattered tile's lanes that point inside its array (one unsigned
    compare, negative offsets being huge unsigned), built next to the access so that the
    lanes' flags live no longer than its mask: gathers and scatters are bounds-checked like
    tiles, a lane outside the array being a masked-off lane."""
    mask = _mask(builder, args, shape, node)
    if tile not in builder.scatter_bounds:
        return mask
    offsets, span, _ = builder.scatter_bounds[tile]
    inside = builder.emit(av.CmpiOp(offsets, sem.splat(builder, span, shape), "ult")).result
    if "mask" not in args or _is_none(args["mask"]):
        return inside
    return builder.emit(arith.AndIOp(mask, inside)).result


def _tile(builder, arg: ast.AST, op: str) -> SSAValue:
    value = builder.visit(arg)
    if not (isinstance(value, SSAValue) and isinstance(value.type, xetile.TileType)):
        raise builder.error(arg, f"{op} expects a tile (from init_tile), got {describe(value)}")
    return value


@LANGUAGE.register("load_tile")
def build_load_tile(builder, node: ast.Call):
    args = _bind(builder, node)
    tile = _tile(builder, args["tile"], "load_tile")
    padding = builder.constexpr(args["padding"], "padding") if "padding" in args else 0
    ttype = tile.type
    pad_attr = None
    if padding != 0:
        elem = ttype.element_type
        pad_attr = FloatAttr(float(padding), elem) if is_float(elem) else IntegerAttr(int(padding), elem)
    vtype = VectorType(ttype.element_type, ttype.get_shape())
    return masks.load(builder, args, tile, lambda: builder.emit(xetile.LoadTileOp(tile, vtype, pad_attr)).value)


@LANGUAGE.register("store_tile")
def build_store_tile(builder, node: ast.Call):
    args = _bind(builder, node)
    value = builder.visit(args["value"])
    tile = _tile(builder, args["tile"], "store_tile")
    if not (isinstance(value, SSAValue) and isinstance(value.type, VectorType)):
        raise builder.error(args["value"], f"store_tile stores a tile value, got {describe(value)}")
    if tuple(value.type.get_shape()) != tuple(tile.type.get_shape()):
        vshape, tshape = list(value.type.get_shape()), list(tile.type.get_shape())
        hint = ""
        if tshape[0] == 1 and vshape == tshape[::-1]:   # a [N, 1] column (a reduction's result) into a row or 1-D tile
            hint = (f"; reductions keep their axis (xt.sum(v, axis=1) is a [{vshape[0]}, 1] column), so make it "
                    f"1-D first: xt.reshape(v, [{vshape[0]}])")
        raise builder.error(node, f"store_tile: value shape {list(ranks.logical_shape(builder, value))} "
                            f"does not match the tile shape {list(ranks.logical_shape(builder, tile))}{hint}")
    if value.type.element_type != tile.type.element_type:
        raise builder.error(node, f"store_tile: value dtype {type_name(value.type.element_type)} differs from "
                            f"the array's {type_name(tile.type.element_type)}; convert it first")
    builder.written_arrays.add(_root_array(tile))
    if not masks.store(builder, args, value, tile):
        builder.emit(xetile.StoreTileOp(value, tile))


def _root_array(tile: SSAValue) -> str:
    """Name hint of the array a tile was initialised from (through loops and updates)."""
    owner = tile.owner
    while not isinstance(owner, xetile.InitTileOp):
        if isinstance(owner, xetile.UpdateTileOffsetOp):
            owner = owner.tile.owner
        else:
            return "*"  # through a loop block argument: be conservative
    return owner.source.name_hint or "*"


@LANGUAGE.register("prefetch_tile")
def build_prefetch_tile(builder, node: ast.Call):
    args = _bind(builder, node)
    tile = _tile(builder, args["tile"], "prefetch_tile")
    locality = builder.constexpr(args["locality"], "locality") if "locality" in args else 3
    if locality not in (0, 1, 2, 3):
        raise builder.error(args["locality"], f"locality must be 0..3, got {locality!r}")
    builder.emit(xetile.PrefetchTileOp(tile, locality))


@LANGUAGE.register("update_tile_offset")
def build_update_tile_offset(builder, node: ast.Call):
    args = _bind(builder, node)
    tile = _tile(builder, args["tile"], "update_tile_offset")
    dx, dy = one_d.update_deltas(builder, node, args, tile)
    return builder.emit(xetile.UpdateTileOffsetOp(tile, dx, dy)).result


@LANGUAGE.register("tile_mma")
def build_tile_mma(builder, node: ast.Call):
    args = _bind(builder, node)
    a, b = builder.visit(args["a"]), builder.visit(args["b"])
    for name, v in (("a", a), ("b", b)):
        if not (isinstance(v, SSAValue) and isinstance(v.type, VectorType) and len(v.type.get_shape()) == 2):
            raise builder.error(args[name], f"tile_mma operand {name} must be a 2-D tile value, got {describe(v)}")
    (m, k), (k2, n) = a.type.get_shape(), b.type.get_shape()
    if k != k2:
        raise builder.error(node, f"tile_mma: inner dimensions differ: a is {m}x{k}, b is {k2}x{n}")
    ta, tb = type_name(a.type.element_type), type_name(b.type.element_type)
    precision = builder.constexpr(args["input_precision"], "input_precision") if "input_precision" in args else None
    if precision not in (None, "tf32"):
        raise builder.error(args["input_precision"], f"input_precision must be None or \"tf32\", got {precision!r}")
    if precision == "tf32":
        if (ta, tb) != ("f32", "f32"):
            raise builder.error(node, f"tile_mma: input_precision=\"tf32\" needs f32 inputs, got {ta} x {tb}")
        ta = tb = "tf32"
    if "f8e4m3fn" in (ta, tb) or "f8e5m2" in (ta, tb):
        _refuse_column_major_fp8_a(builder, a, ta, args["a"])
        (a, ta), (b, tb) = fp8_mma_operands(builder, (a, ta), (b, tb), node)
    cfg = builder.target.dpas_for(ta, tb)
    if cfg is None and "f32" in (ta, tb):
        raise builder.error(node, f"tile_mma: {ta} x {tb} needs the tf32 matrix engine (f32 tiles are "
                            f"multiplied as tf32), which {builder.target.name} does not have; convert the "
                            f"inputs to f16 or bf16 (legal input pairs: "
                            f"{', '.join(builder.target.legal_mma_inputs())})")
    if cfg is None:
        raise builder.error(node, f"tile_mma: {ta} x {tb} has no matrix engine form on {builder.target.name}; "
                            f"legal input pairs: {', '.join(builder.target.legal_mma_inputs())}")
    c = builder.visit(args["c"]) if "c" in args and not _is_none(args["c"]) else None
    acc_name = "i32" if ta in ("i8", "u8") else "f32"
    if c is not None:
        if not (isinstance(c, SSAValue) and isinstance(c.type, VectorType)):
            raise builder.error(args["c"], f"tile_mma accumulator must be a tile value, got {describe(c)}")
        acc_name = type_name(c.type.element_type)
        if tuple(c.type.get_shape()) != (m, n):
            raise builder.error(args["c"], f"tile_mma: accumulator shape {list(c.type.get_shape())} must be "
                                f"[{m}, {n}]")
    supported = [t for t in cfg.acc_types if t in ("f32", "i32")]
    if acc_name not in supported:
        raise builder.error(args.get("c", node), f"tile_mma: {ta} x {tb} cannot accumulate in {acc_name} on "
                            f"{builder.target.name}; use an accumulator of dtype {', '.join(supported)}")
    rtype = VectorType(ir_type(acc_name), [m, n])
    op = builder.emit(xetile.TileMMAOp(a, b, c, rtype, _wg_map_arg(builder, args, [m, n], "tile_mma")))
    if precision == "tf32":
        op.attributes["input_precision"] = StringAttr("tf32")
    return op.output


def _refuse_column_major_fp8_a(builder, a: SSAValue, ta: str, node: ast.AST) -> None:
    """An fp8 A loaded through a column-major (order=(0, 1)) tile: its per-lane layout is
    not lowered, so every flavour refuses it here alike (B may be column-major)."""
    owner = getattr(a, "owner", None)
    if ta in FP8_TYPES and isinstance(owner, xetile.LoadTileOp):
        if [v.data for v in owner.tile.type.attr.order.data] == [0, 1]:
            raise builder.error(node, f"tile_mma: an A operand of {ta} loaded through a column-major "
                                "(order=(0, 1)) tile is not supported yet; load A row-major, or convert it "
                                "to float16 first (B may be column-major)")


def fp8_mma_operands(builder, a, b, node: ast.AST):
    """fp8 tile_mma operands ((value, type name) pairs) as the DPAS takes them: unchanged
    where the target has an fp8 DPAS flavour for the pair, else converted in registers to
    the target's ``fp8_mma_input`` (exact, semantic.convert_fp8)."""
    via = builder.target.fp8_mma_input(a[1], b[1])
    if via is None:
        return a, b
    out = []
    for v, t in (a, b):
        if t in FP8_TYPES:
            v, t = sem.convert(builder, v, ir_type(via), node), via
        out.append((v, t))
    return out


def args_repr(value) -> str:
    return repr(value) if value is not None else "None"


def _scatter_tile(builder, arg, op):
    tile = _tile(builder, arg, op)
    if not tile.type.attr.is_scattered:
        raise builder.error(arg, f"{op} needs a scattered tile: init_tile(base, offsets) with a tile value of "
                            f"offsets; use load_tile/store_tile for block tiles")
    return tile


def _mask(builder, args, shape, node):
    if "mask" not in args or _is_none(args["mask"]):
        return sem.constant(builder, 1, i1, shape)
    mask = builder.visit(args["mask"])
    if not (sem.is_const(mask) or sem.elem_of(mask) == i1):
        raise builder.error(args["mask"], f"type mismatch: the mask must be a comparison result, got {describe(mask)}")
    return sem.coerce(builder, mask, i1, shape, args["mask"])


@LANGUAGE.register("load_gather")
def build_load_gather(builder, node: ast.Call):
    args = _bind(builder, node)
    tile = _scatter_tile(builder, args["tile"], "load_gather")
    shape = tuple(tile.type.get_shape())
    mask = _with_bounds(builder, tile, args, shape, node)
    padding = builder.constexpr(args["padding"], "padding") if "padding" in args else 0
    elem = tile.type.element_type
    pad = None
    if padding != 0:
        pad = FloatAttr(float(padding), elem) if is_float(elem) else IntegerAttr(int(padding), elem)
    return builder.emit(xetile.LoadGatherOp(tile, mask, VectorType(elem, list(shape)), pad)).value


@LANGUAGE.register("store_scatter")
def build_store_scatter(builder, node: ast.Call):
    args = _bind(builder, node)
    tile = _scatter_tile(builder, args["tile"], "store_scatter")
    shape = tuple(tile.type.get_shape())
    value = builder.visit(args["value"])
    if sem.is_tile(value) and sem.elem_of(value) != tile.type.element_type:
        raise builder.error(args["value"], f"store_scatter: value dtype {type_name(sem.elem_of(value))} differs "
                            f"from the array's {type_name(tile.type.element_type)}; convert it first")
    value = sem.coerce(builder, value, tile.type.element_type, shape, args["value"])
    mask = _with_bounds(builder, tile, args, shape, node)
    builder.written_arrays.add(_root_array(tile))
    builder.emit(xetile.StoreScatterOp(value, tile, mask))


@LANGUAGE.register("tile_conv_layout")
def build_tile_conv_layout(builder, node: ast.Call):
    args = _bind(builder, node)
    value = builder.visit(args["value"])
    if not (isinstance(value, SSAValue) and isinstance(value.type, VectorType)):
        raise builder.error(args["value"], f"tile_conv_layout expects a tile value, got {describe(value)}")
    target = wg_map_attr(builder, args["wg_map"])
    if target is None:
        raise builder.error(node, "tile_conv_layout needs the target wg_map")
    source = wg_map_attr(builder, args.get("source_wg_map"))
    return builder.emit(xetile.TileConvLayoutOp(value, target, source)).result


def _wg_map_arg(builder, args, shape, op: str):
    """The ``wg_map=`` argument as an IR attribute (None when absent), checked against
    ``shape`` by the RFC's distribution rules."""
    if "wg_map" not in args or _is_none(args["wg_map"]):
        return None
    value = builder.constexpr(args["wg_map"], "wg_map")
    if not isinstance(value, lang.wg_map):
        raise builder.error(args["wg_map"], f"{op}: wg_map must be an xt.wg_map(sg_layout=..., sg_data=...), "
                            f"got {value!r}")
    attr = xetile.WgMapAttr(value.sg_layout, value.sg_data)
    try:
        check_wg_map(attr, shape, f"{op} of shape {list(shape)}")
    except VerifyException as exc:
        raise builder.error(args["wg_map"], str(exc)) from None
    return attr


def _is_none(arg: ast.AST) -> bool:
    return isinstance(arg, ast.Constant) and arg.value is None


def _shape_and_dtype(builder, args):
    shape = _int_pair(builder, args["shape"], "the shape", constexpr=True)
    dt = builder.constexpr(args["dtype"], "dtype")
    if not isinstance(dt, lang.dtype):
        raise builder.error(args["dtype"], f"dtype must be an xetile_dsl dtype such as xt.float32, got {dt!r}")
    return shape, dt


__all__ = [name for name in dir() if name.startswith("build_")] + ["INDEX"]
