"""IR builders for the calls of ``xetile_dsl.language`` (one ``build_<name>`` per op)."""
from __future__ import annotations

import ast
import inspect

from xdsl.dialects import gpu
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, MemRefType, VectorType
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from ..dialects import xetile
from ..dialects.xetile import check_wg_map
from ..language import core as lang
from .ast_to_xetile import INDEX, dense_splat, describe
from .types import ir_type, is_float, type_name

_DIMS = ("x", "y", "z")


def _bind(builder, node: ast.Call) -> dict[str, ast.AST]:
    """Map the stub's parameter names to the call's argument nodes (Python call rules)."""
    stub = builder.visit(node.func)
    sig = inspect.signature(inspect.unwrap(stub))
    if any(isinstance(a, ast.Starred) for a in node.args):
        raise builder.error(node, "*args are not supported in kernel calls")
    try:
        bound = sig.bind(*node.args, **{k.arg: k.value for k in node.keywords})
    except TypeError as exc:
        raise builder.error(node, f"{stub.__xetile_builtin__}(): {exc}") from None
    return dict(bound.arguments)


def _axis(builder, node: ast.Call, arg: ast.AST) -> gpu.DimensionAttr:
    axis = builder.constexpr(arg, "the axis")
    if axis not in (0, 1, 2):
        raise builder.error(arg, f"axis must be 0, 1 or 2, got {axis!r}")
    return gpu.DimensionAttr(gpu.DimensionEnum(_DIMS[axis]))


def build_program_id(builder, node: ast.Call):
    args = _bind(builder, node)
    return builder.emit(gpu.BlockIdOp(_axis(builder, node, args["axis"]))).result


def build_num_programs(builder, node: ast.Call):
    args = _bind(builder, node)
    return builder.emit(gpu.GridDimOp(_axis(builder, node, args["axis"]))).result


def _int_pair(builder, arg: ast.AST, what: str, constexpr: bool):
    values = builder.visit(arg)
    if not isinstance(values, (list, tuple)) or len(values) != 2:
        raise builder.error(arg, f"{what} must be a list of two integers, got {describe(values)}")
    if constexpr and any(isinstance(v, SSAValue) or not isinstance(v, int) or v <= 0 for v in values):
        raise builder.error(arg, f"{what} must be two positive compile-time integers (constexprs), got {values}")
    return list(values)


def build_init_tile(builder, node: ast.Call):
    args = _bind(builder, node)
    base = builder.visit(args["base"])
    if not (isinstance(base, SSAValue) and isinstance(base.type, MemRefType)):
        raise builder.error(args["base"], f"init_tile needs a 2-D array argument as its base, got {describe(base)}")
    shape = _int_pair(builder, args["shape"], "the tile shape", constexpr=True)
    offsets = [builder.index(v, args["offsets"]) for v in _int_pair(builder, args["offsets"], "offsets", False)]
    order = tuple(builder.constexpr(args["order"], "order")) if "order" in args else (1, 0)
    if order not in ((1, 0), (0, 1)):
        raise builder.error(args["order"], f"order must be (1, 0) (row-major) or (0, 1) (column-major), got {order}")
    if order != (1, 0):
        raise builder.error(args["order"], "column-major tiles (order=(0, 1)) are not supported by the compiler yet")
    sizes, strides = builder.array_meta[base]
    wg = _wg_map_arg(builder, args, shape, "init_tile")
    tile_type = xetile.TileType(shape, base.type.element_type, xetile.TileAttr(order=order, wg_map=wg))
    return builder.emit(xetile.InitTileOp(base, offsets, tile_type, sizes, strides)).tile


def _tile(builder, arg: ast.AST, op: str) -> SSAValue:
    value = builder.visit(arg)
    if not (isinstance(value, SSAValue) and isinstance(value.type, xetile.TileType)):
        raise builder.error(arg, f"{op} expects a tile (from init_tile), got {describe(value)}")
    return value


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
    return builder.emit(xetile.LoadTileOp(tile, vtype, pad_attr)).value


def build_store_tile(builder, node: ast.Call):
    args = _bind(builder, node)
    value = builder.visit(args["value"])
    tile = _tile(builder, args["tile"], "store_tile")
    if not (isinstance(value, SSAValue) and isinstance(value.type, VectorType)):
        raise builder.error(args["value"], f"store_tile stores a tile value, got {describe(value)}")
    if tuple(value.type.get_shape()) != tuple(tile.type.get_shape()):
        raise builder.error(node, f"store_tile: value shape {list(value.type.get_shape())} does not match the "
                            f"tile shape {list(tile.type.get_shape())}")
    if value.type.element_type != tile.type.element_type:
        raise builder.error(node, f"store_tile: value dtype {type_name(value.type.element_type)} differs from "
                            f"the array's {type_name(tile.type.element_type)}; convert it first")
    builder.written_arrays.add(_root_array(tile))
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


def build_prefetch_tile(builder, node: ast.Call):
    args = _bind(builder, node)
    tile = _tile(builder, args["tile"], "prefetch_tile")
    locality = builder.constexpr(args["locality"], "locality") if "locality" in args else 3
    if locality not in (0, 1, 2, 3):
        raise builder.error(args["locality"], f"locality must be 0..3, got {locality!r}")
    builder.emit(xetile.PrefetchTileOp(tile, locality))


def build_update_tile_offset(builder, node: ast.Call):
    args = _bind(builder, node)
    tile = _tile(builder, args["tile"], "update_tile_offset")
    dx = builder.index(builder.visit(args["row_delta"]), args["row_delta"])
    dy = builder.index(builder.visit(args["col_delta"]), args["col_delta"])
    return builder.emit(xetile.UpdateTileOffsetOp(tile, dx, dy)).result


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
    wg = _wg_map_arg(builder, args, [m, n], "tile_mma")
    return builder.emit(xetile.TileMMAOp(a, b, c, rtype, wg)).output


def build_wg_map(builder, node: ast.Call):
    """``xt.wg_map(sg_layout=[..], sg_data=[..])`` evaluated at compile time."""
    args = _bind(builder, node)
    values = {k: builder.constexpr(v, k) for k, v in args.items()}
    try:
        return lang.wg_map(**values)
    except (TypeError, ValueError) as exc:
        raise builder.error(node, str(exc)) from None


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


def build_zeros(builder, node: ast.Call):
    shape, dt = _shape_and_dtype(builder, _bind(builder, node))
    return builder.emit(dense_splat(shape, dt.name, 0)).result


def build_full(builder, node: ast.Call):
    args = _bind(builder, node)
    shape, dt = _shape_and_dtype(builder, args)
    value = builder.constexpr(args["value"], "the fill value")
    return builder.emit(dense_splat(shape, dt.name, value)).result


__all__ = [name for name in dir() if name.startswith("build_")] + ["INDEX"]
