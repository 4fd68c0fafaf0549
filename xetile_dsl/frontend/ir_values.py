"""Small pieces every frontend module shares: the index type, how an error message names
a value, and splat constants.  They live apart from the AST walker so that the modules
it calls into (control flow, scalars, element-wise and tile ops) import them without
importing the walker back."""
from __future__ import annotations

from types import ModuleType

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IndexType, MemRefType, VectorType
from xdsl.ir import Operation, SSAValue

from ..dialects import xetile
from ..language import core as lang
from ..dialects.types import ir_type, is_float, type_name

INDEX = IndexType()


def describe(value) -> str:
    """How an error message names ``value``: a tile, a tile value, an array, a runtime
    scalar, a dtype, a module or a Python value."""
    if isinstance(value, SSAValue):
        t = value.type
        if isinstance(t, xetile.TileType):
            return f"a tile {'x'.join(map(str, t.get_shape()))}x{type_name(t.element_type)}"
        if isinstance(t, VectorType):
            return f"a tile value {'x'.join(map(str, t.get_shape()))}x{type_name(t.element_type)}"
        if isinstance(t, MemRefType):
            rank = len(t.get_shape())
            return f"an array of {type_name(t.element_type)}" if rank <= 2 else \
                f"a {rank}-D array of {type_name(t.element_type)}"
        return f"a runtime scalar of type {type_name(t) if not isinstance(t, IndexType) else 'int'}"
    if isinstance(value, lang.dtype):
        return f"the dtype {value!r}"
    if isinstance(value, ModuleType):
        return f"module {value.__name__}"
    return f"{type(value).__name__} {value!r}"


def dense_splat(shape, dtype_name: str, value) -> Operation:
    """``arith.constant dense<value> : vector<shape x dtype>``."""
    elem = ir_type(dtype_name)
    vtype = VectorType(elem, shape)
    py = float(value) if is_float(elem) else int(value)
    return arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vtype, [py]))
