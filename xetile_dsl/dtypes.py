"""Element types: the one table of what each element type is, read by every layer.

An element type has one name everywhere inside the package ("f16", "bf16", "i8", ...):
the language's ``xt.float16`` carries it, the IR prints it, the ABI stores it, the cache
keys hold it.  This module says, per name, its width, whether it is a float, a signed or
unsigned integer, the numpy dtype that holds it (``ml_dtypes.bfloat16`` for bf16) and its
name in the language.  The xDSL types of the names live one layer up
(:mod:`xetile_dsl.dialects.types`, which builds them from this table); what each op
accepts is the op's verifier's business and the DPAS flavours are the target's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._lazy import LazyModule

ml_dtypes = LazyModule("ml_dtypes", globals())  # loaded with the first bf16 array


@dataclass(frozen=True)
class ElementType:
    name: str                 #: the package's name ("f16")
    bits: int
    kind: str                 #: "float", "int" (signed), "uint", "bool" or "index"
    language_name: str        #: ``xt.<language_name>``
    numpy_name: str | None    #: the numpy dtype of arrays of it; None: arrays cannot hold it

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "uint"

    @property
    def bytes(self) -> int:
        return max(1, self.bits // 8)


def _table(*types: ElementType) -> dict[str, ElementType]:
    return {t.name: t for t in types}


#: every element type, by name
ELEMENT_TYPES: dict[str, ElementType] = _table(
    ElementType("f16", 16, "float", "float16", "float16"),
    ElementType("bf16", 16, "float", "bfloat16", "bfloat16"),
    ElementType("f32", 32, "float", "float32", "float32"),
    # tf32: f32 storage, multiplied at TensorFloat-32 precision (an mma input type only)
    ElementType("tf32", 32, "float", "tfloat32", None),
    ElementType("f64", 64, "float", "float64", "float64"),
    # fp8 (OCP 8-bit floats): arrays hold ml_dtypes' float8 types; kernels load, store,
    # convert (xt.astype) and multiply (xt.tile_mma) them; no arithmetic in fp8
    ElementType("f8e4m3fn", 8, "float", "float8_e4m3fn", "float8_e4m3fn"),
    ElementType("f8e5m2", 8, "float", "float8_e5m2", "float8_e5m2"),
    ElementType("i1", 1, "bool", "int1", None),
    ElementType("i8", 8, "int", "int8", "int8"),
    ElementType("u8", 8, "uint", "uint8", "uint8"),
    ElementType("i16", 16, "int", "int16", "int16"),
    ElementType("i32", 32, "int", "int32", "int32"),
    ElementType("u32", 32, "uint", "uint32", "uint32"),
    ElementType("i64", 64, "int", "int64", "int64"),
    ElementType("index", 64, "index", "index", None),
)

#: the element types arrays (kernel arguments) can hold, by name
ARRAY_TYPES: dict[str, ElementType] = {n: t for n, t in ELEMENT_TYPES.items() if t.numpy_name is not None}

#: numpy dtype name -> the element type of arrays of that dtype
OF_NUMPY_NAME: dict[str, ElementType] = {t.numpy_name: t for t in ARRAY_TYPES.values()}


def element(name: str) -> ElementType:
    """The element type called ``name``; KeyError naming the known ones otherwise."""
    try:
        return ELEMENT_TYPES[name]
    except KeyError:
        raise KeyError(f"unknown element type {name!r}; known: {', '.join(ELEMENT_TYPES)}") from None


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of arrays of element type ``name`` (bf16: ``ml_dtypes.bfloat16``)."""
    numpy_name = element(name).numpy_name
    if numpy_name is None:
        raise KeyError(f"no array holds {name} elements")
    if name in _ML_DTYPES:
        return np.dtype(getattr(ml_dtypes, numpy_name))
    return np.dtype(numpy_name)


#: element types whose numpy dtype is ml_dtypes'
_ML_DTYPES = ("bf16", "f8e4m3fn", "f8e5m2")

#: the 8-bit float element types
FP8_TYPES = ("f8e4m3fn", "f8e5m2")


def numpy_kind(dtype) -> str:
    """numpy's one-letter kind of ``dtype`` ("f", "i", "u", "b", ...), with ml_dtypes' types
    given theirs: numpy reports ``bfloat16`` and most float8/float4 types as ``"V"`` (and
    ``int4`` as ``"V"`` too), so ``dtype.kind == "f"`` misses them.  Ask this, never ``.kind``."""
    dt = np.dtype(dtype)
    if dt.kind != "V" or dt.fields is not None or getattr(dt.type, "__module__", "") != "ml_dtypes":
        return dt.kind
    if "float" in dt.name:
        return "f"
    return "u" if dt.name.startswith("uint") else "i" if dt.name.startswith("int") else dt.kind


def numpy_is_float(dtype) -> bool:
    """``dtype`` holds floats (numpy's, or ml_dtypes' bfloat16 and float8 types)."""
    return numpy_kind(dtype) == "f"
