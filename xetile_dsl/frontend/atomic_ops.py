"""IR builders of the atomics: ``atomic_rmw`` (tile and array forms), ``atomic_cas``,
``atomic_xchg`` and ``fence`` (``language/atomics.py`` describes the forms and orders).

The array forms build ``xetile.atomic_rmw_scalar`` / ``xetile.atomic_cas_scalar`` on the
array and its indices; the tile forms ``xetile.atomic_rmw`` as before.  ``sem`` and
``scope`` become the ops' properties only when the call gives them (absent means the
defaults, acq_rel and device)."""
from __future__ import annotations

import ast
import inspect

from xdsl.dialects import vector
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import SSAValue

from ..dialects import xetile
from ..dialects.types import is_float, is_unsigned, type_name
from . import semantic as sem
from .ir_values import describe
from .language_registry import LANGUAGE
from .tile_ops import SLM_SPACE, _bind, _is_none, _memory_space, _root_array, _tile, _with_bounds

#: language kind -> (signed int, unsigned int, float) arith kind; None: not for that type
_KINDS = {"add": ("addi", "addi", "addf"), "mul": ("muli", "muli", "mulf"), "max": ("maxs", "maxu", "maximumf"),
          "min": ("mins", "minu", "minimumf"), "and": ("andi", "andi", None), "or": ("ori", "ori", None),
          "xor": ("xori", "xori", None), "xchg": ("assign", "assign", "assign"),
          "assign": ("assign", "assign", "assign")}
#: element types of every atomic (SPIR-V's 32/64-bit atomics; 16-bit floats in a 32-bit word)
_SCALAR_TYPES = ("i32", "u32", "i64", "f32", "f16", "bf16")
_CAS_TYPES = ("i32", "u32", "i64")
_FLOAT_KINDS = ("addf", "mulf", "maximumf", "minimumf", "maxnumf", "minnumf")


def _order(builder, args: dict, op: str) -> tuple[str | None, str | None]:
    """The call's ``sem`` and ``scope`` (None when not given), checked."""
    out = []
    for key, legal in (("sem", xetile.SEMS), ("scope", xetile.SCOPES)):
        if key not in args:
            out.append(None)
            continue
        value = builder.constexpr(args[key], f"{op}'s {key}")
        if value not in legal:
            raise builder.error(args[key], f"{op}: {key}={value!r} is not one of "
                                f"{', '.join(repr(v) for v in legal)}")
        out.append(value)
    return out[0], out[1]


def _kind(builder, node: ast.AST, kind, elem, op: str) -> str:
    if kind in _KINDS:
        kind = _KINDS[kind][2 if is_float(elem) else 1 if is_unsigned(elem) else 0]
    float_kind = kind in _FLOAT_KINDS
    if kind is None or kind not in xetile.ATOMIC_KINDS or (kind != "assign" and float_kind != is_float(elem)):
        raise builder.error(node, f"{op}: kind is not defined for {type_name(elem)}; use add, max, min, mul or "
                            "xchg on floats, and also and, or, xor on integers")
    return kind


def _is_array(value) -> bool:
    return isinstance(value, SSAValue) and isinstance(value.type, MemRefType)


def _element_access(builder, args: dict, array_key: str, index_key: str, op: str, legal=_SCALAR_TYPES):
    """(array, index values) of an array form, checked: the element type and one index
    per dimension."""
    array = builder.visit(args[array_key])
    if _memory_space(array) == SLM_SPACE:
        raise builder.error(args[array_key], f"{op}: atomics on shared local memory (xt.slm_alloc) are not "
                            "supported; use a kernel array argument")
    elem = array.type.element_type
    sem.refuse_fp8_element(builder, elem, args[array_key])
    if type_name(elem) not in legal:
        raise builder.error(args[array_key], f"{op}: an array of {type_name(elem)} has no such atomic; "
                            f"use an array of {', '.join(legal)}")
    node = args.get(index_key)
    indices = builder.visit(node) if node is not None else None
    if not isinstance(indices, (list, tuple)):
        raise builder.error(node or args[array_key], f"{op}: the array form needs a list of indices, one per "
                            f"dimension, e.g. [i] or [i, j]; got {describe(indices)}")
    rank = len(array.type.get_shape())
    if len(indices) != rank:
        raise builder.error(node, f"{op}: {len(indices)} index(es) for a {rank}-D array; give {rank}")
    builder.written_arrays.add(array.name_hint or "*")
    return array, [builder.index(i, node) for i in indices]


def _scalar(builder, node: ast.AST, elem):
    """The value of an array form: a number, a scalar, or a [1, 1] tile's one element."""
    value = builder.visit(node)
    if sem.is_tile(value) and list(value.type.get_shape()) == [1, 1]:
        value = builder.emit(vector.ExtractOp(value, [0, 0], value.type.element_type)).result
    elif sem.is_tile(value):
        raise builder.error(node, f"the array form of an atomic takes a scalar value (or a [1, 1] tile), got "
                            f"{describe(value)}; use the tile form for a tile of values")
    return sem.coerce(builder, value, elem, None, node)


@LANGUAGE.register("atomic_rmw")
def build_atomic_rmw(builder, node: ast.Call):
    args = _bind(builder, node)
    kind = builder.constexpr(args["kind"], "the atomic kind")
    order = _order(builder, args, "atomic_rmw")
    if _is_array(builder.visit(args["tile"])):
        array, indices = _element_access(builder, args, "tile", "mask", "atomic_rmw")
        elem = array.type.element_type
        kind = _kind(builder, args["kind"], kind, elem, "atomic_rmw")
        value = _scalar(builder, args["value"], elem)
        return builder.emit(xetile.AtomicRMWScalarOp(kind, value, array, indices, *order)).result
    return _tile_rmw(builder, node, args, kind, args["value"], order, "atomic_rmw")


def _tile_rmw(builder, node, args, kind, value_node, order, op: str, cmp_node=None):
    tile_node = args["tile"] if "tile" in args else args["x"]
    tile = _tile(builder, tile_node, op)
    elem = tile.type.element_type
    sem.refuse_fp8_element(builder, elem, node)
    legal = _SCALAR_TYPES if cmp_node is None else _CAS_TYPES
    if type_name(elem) not in legal:
        what = "atomics" if cmp_node is None else "compare-exchange"
        raise builder.error(tile_node, f"{op}: a tile of {type_name(elem)} has no {what}; use a tile of "
                            f"{', '.join(legal)}")
    shape = tuple(tile.type.get_shape())
    value = sem.coerce(builder, builder.visit(value_node), elem, shape, value_node)
    cmp = None if cmp_node is None else sem.coerce(builder, builder.visit(cmp_node), elem, shape, cmp_node)
    kind = "cmpxchg" if cmp_node is not None else _kind(builder, args.get("kind", node), kind, elem, op)
    mask = None
    if tile.type.attr.is_scattered:  # bounds-checked like gathers: a lane outside the array does nothing
        mask = _with_bounds(builder, tile, args, tuple(tile.type.get_shape()), node)
    elif "mask" in args and not _is_none(args["mask"]):
        raise builder.error(args["mask"], f"{op}: a mask needs a scattered tile (init_tile(array, offsets)); "
                            "a block tile's lanes outside the array are already skipped")
    builder.written_arrays.add(_root_array(tile))
    rmw = xetile.AtomicRMWOp(kind, value, tile, mask=mask, cmp=cmp)
    rmw.properties.update(xetile.order_props(*order))
    return builder.emit(rmw).result


@LANGUAGE.register("atomic_xchg")
def build_atomic_xchg(builder, node: ast.Call):
    args = _bind(builder, node)
    order = _order(builder, args, "atomic_xchg")
    x = builder.visit(args["x"])
    if _is_array(x):
        array, indices = _element_access(builder, args, "x", "index", "atomic_xchg")
        if "val" not in args:
            raise builder.error(node, "atomic_xchg: the array form is atomic_xchg(x, [i, ...], val)")
        value = _scalar(builder, args["val"], array.type.element_type)
        return builder.emit(xetile.AtomicRMWScalarOp("assign", value, array, indices, *order)).result
    if "val" in args and not _is_none(args["val"]):
        raise builder.error(args["val"], "atomic_xchg: the tile form is atomic_xchg(tile, values, mask=None)")
    return _tile_rmw(builder, node, args, "assign", args["index"], order, "atomic_xchg")


def _tile_cas_signature(tile, cmp, val, mask=None, sem=None, scope=None):
    """The parameters of atomic_cas's tile form."""


_TILE_CAS = inspect.signature(_tile_cas_signature)


@LANGUAGE.register("atomic_cas")
def build_atomic_cas(builder, node: ast.Call):
    args = _bind(builder, node)
    order = _order(builder, args, "atomic_cas")
    x = builder.visit(args["x"])
    if isinstance(x, SSAValue) and isinstance(x.type, xetile.TileType):
        try:  # the tile form's own parameters: atomic_cas(tile, cmp, val, mask=None, sem=, scope=)
            tile_args = dict(_TILE_CAS.bind(*node.args, **{k.arg: k.value for k in node.keywords}).arguments)
        except TypeError as exc:
            raise builder.error(node, f"atomic_cas: the tile form is atomic_cas(tile, cmp, val, mask=None, sem=, "
                                f"scope=): {exc}") from None
        if isinstance(tile_args["cmp"], (ast.List, ast.Tuple)):
            raise builder.error(tile_args["cmp"], "atomic_cas: the tile form is atomic_cas(tile, cmp, val, "
                                "mask=None), with no index list (the tile is where it updates)")
        return _tile_rmw(builder, node, tile_args, "cmpxchg", tile_args["val"], order, "atomic_cas",
                         tile_args["cmp"])
    if not _is_array(x):
        raise builder.error(args["x"], f"atomic_cas takes an array and a list of indices, "
                            f"atomic_cas(lock, [i], cmp, val), or a tile, atomic_cas(tile, cmp, val); got "
                            f"{describe(x)}")
    if type_name(x.type.element_type) in ("f32", "f16", "bf16"):
        raise builder.error(args["x"], f"atomic_cas: compare-exchange on {type_name(x.type.element_type)} is not "
                            f"supported; use an array of {', '.join(_CAS_TYPES)} (or atomic_rmw for float "
                            "add/max/min)")
    array, indices = _element_access(builder, args, "x", "index", "atomic_cas", _CAS_TYPES)
    elem = array.type.element_type
    cmp, value = _scalar(builder, args["cmp"], elem), _scalar(builder, args["val"], elem)
    return builder.emit(xetile.AtomicCASScalarOp(array, indices, cmp, value, *order)).result


@LANGUAGE.register("fence")
def build_fence(builder, node: ast.Call):
    args = _bind(builder, node)
    order = _order(builder, args, "fence")
    if order[0] == "relaxed":
        raise builder.error(args["sem"], "fence: a relaxed fence orders nothing; use 'acquire', 'release' or "
                            "'acq_rel'")
    builder.emit(xetile.FenceOp(*order))



