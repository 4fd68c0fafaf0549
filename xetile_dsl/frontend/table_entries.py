"""Array tables in a kernel: ``tab[g]``, one entry of an ``xd.array_table`` argument.

The argument is the device table, an ``i64`` array of ``[G, 4]`` rows (address, rows,
columns, row stride in elements; docs/decisions/027-array-tables.md).  ``tab[g]`` (g a
runtime or compile-time integer) reads row g (an index outside the table reads zeros: an
entry of no rows, whose tiles read padding and drop stores) and is usable only as

* the base of ``xt.init_tile(tab[g], [row, col], [BM, BK])``: ``init_tile`` on the i64
  address with the entry's dynamic shape and strides (the XeGPU RFC's form), and
* ``tab[g].shape``: the entry's two extents as runtime scalars.

Example::

    @xd.jit
    def scale(tab, BM: xt.constexpr, BN: xt.constexpr):
        g = xt.program_id(1)
        t = xt.init_tile(tab[g], [xt.program_id(0) * BM, 0], [BM, BN])
        xt.store_tile(xt.load_tile(t) * 2.0, t)
"""
from __future__ import annotations

import ast

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType
from xdsl.ir import SSAValue

from . import array_elements
from ..dialects import xetile
from .ir_values import describe


class TableEntry:
    """``tab[g]``: the entry's i64 address, rows, columns and row stride (index values)
    and its element type."""

    def __init__(self, name: str, address, rows, cols, stride, element_type):
        self.name, self.address, self.element_type = name, address, element_type
        self.rows, self.cols, self.stride = rows, cols, stride

    @property
    def shape(self) -> tuple:
        """The entry's extents (rows, columns) as runtime scalars."""
        return (self.rows, self.cols)

    def __repr__(self) -> str:
        return (f"{self.name}[g], an array table entry (usable only as the base of "
                f"xt.init_tile({self.name}[g], [row, col], [BM, BN]) or through {self.name}[g].shape)")

    def _refuse(self, *_):
        raise TypeError(repr(self))


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lt", "le", "gt", "ge", "and", "or",
            "xor", "lshift", "rshift", "neg", "pos", "invert", "bool", "index", "int", "float", "iter"):
    setattr(TableEntry, f"__{_op}__", TableEntry._refuse)
    if _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor"):
        setattr(TableEntry, f"__r{_op}__", TableEntry._refuse)


def is_table(builder, value) -> bool:
    return isinstance(value, SSAValue) and value in builder.tables


def subscript(builder, table: SSAValue, node: ast.Subscript, evaluated: type) -> TableEntry:
    """``tab[g]``: the four fields of row g of the device table (``evaluated``: the AST
    leaf class that holds a computed value, expressions.Evaluated)."""
    if isinstance(node.slice, (ast.Tuple, ast.Slice)):
        raise builder.error(node, f"an array table takes one index, the entry: {table.name_hint}[g]")
    value = builder.visit(node.slice)
    if isinstance(value, bool) or not isinstance(value, (int, SSAValue)) or \
            (isinstance(value, SSAValue) and not isinstance(value.type, IndexType)):
        raise builder.error(node.slice, f"an array table's index must be an integer, got {describe(value)}")
    g = ast.copy_location(ast.Constant(value=value) if isinstance(value, int) else evaluated(value), node.slice)
    fields = []
    for k in range(4):
        field = ast.copy_location(ast.Constant(value=k), node)
        elem = array_elements.load_element(builder, table, [g, field], node)
        fields.append(elem if k == 0 else builder.emit(arith.IndexCastOp(elem, IndexType())).result)
    return TableEntry(table.name_hint or "tab", *fields, builder.tables[table])



def init_tile(builder, node: ast.Call, args: dict, entry: TableEntry, int_pair, wg_map_of):
    """``xt.init_tile(tab[g], [row, col], [BM, BN])``: a row-major tile on the entry's i64
    address with its dynamic extents and row stride (``int_pair``, ``wg_map_of``:
    tile_ops' checks of a pair and of the wg_map argument)."""
    if "shape" not in args:
        raise builder.error(node, f"init_tile on a table entry needs a shape: xt.init_tile({entry.name}[g], "
                            "[row, col], [BM, BN])")
    if "order" in args and tuple(builder.constexpr(args["order"], "order")) != (1, 0):
        raise builder.error(args["order"], "a tile of an array table entry is row-major: order=(1, 0)")
    offsets = builder.visit(args["offsets"])
    if isinstance(offsets, SSAValue):
        raise builder.error(args["offsets"], "scattered tiles of an array table entry are not supported; "
                            "give the offsets as [row, col]")
    shape = int_pair(builder, args["shape"], "the tile shape", constexpr=True)
    offsets = [builder.index(v, args["offsets"]) for v in int_pair(builder, args["offsets"], "offsets", False,
                                                                     values=offsets)]
    tile_type = xetile.TileType(shape, entry.element_type,
                                xetile.TileAttr(order=(1, 0), wg_map=wg_map_of(builder, args, shape, "init_tile")))
    sizes, strides = [entry.rows, entry.cols], [entry.stride, builder.index(1, node)]
    return builder.emit(xetile.InitTileOp(entry.address, offsets, tile_type, sizes, strides)).tile
