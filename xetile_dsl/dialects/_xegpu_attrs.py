"""XeGPU attributes and types (the XeGPU RFC, the XeGPU op reference).

sg_map, block_tdesc_attr, scatter_tdesc_attr, cache_hint, memory_space, fence_scope,
layout, slice; the tensor_desc and nbarrier types.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    IntAttr,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from ._syntax import LayoutDataAttr, int_tuple, parse_fields, ints, parse_int_list, parse_int_value, print_int_list


def element_bits(t: Attribute) -> int:
    """Bit width of a scalar element type (index counts as 64)."""
    width = getattr(t, "width", None)
    if width is not None:
        return width.data if hasattr(width, "data") else int(width)
    return getattr(t, "bitwidth", 64)


_BLOCK_FIELDS = {"memory_space": AttrParser.parse_identifier, "array_length": parse_int_value,
                 "boundary_check": AttrParser.parse_boolean}
_SCATTER_FIELDS = {"memory_space": AttrParser.parse_identifier, "chunk_size": parse_int_value}


def _read_block_field(parser: AttrParser, key: str) -> object:
    if key not in _BLOCK_FIELDS:
        parser.raise_error(f"unknown block_tdesc_attr field '{key}' ({', '.join(_BLOCK_FIELDS)})")
    return _BLOCK_FIELDS[key](parser)


def _read_scatter_field(parser: AttrParser, key: str) -> object:
    if key not in _SCATTER_FIELDS:
        parser.raise_error(f"unknown scatter_tdesc_attr field '{key}' ({', '.join(_SCATTER_FIELDS)})")
    return _SCATTER_FIELDS[key](parser)


# ----------------------------------------------------------------------------- attributes
@irdl_attr_definition
class SGMapAttr(LayoutDataAttr):
    """``#xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 1]>``: how a subgroup's tensor is
    split among its work items (lanes)."""

    name = "xegpu.sg_map"
    wi_layout: ArrayAttr[IntAttr]
    wi_data: ArrayAttr[IntAttr]
    KEYS: ClassVar = ("wi_layout", "wi_data")

    @property
    def lanes(self) -> int:
        return self.layout[0] * self.layout[1]

    def verify(self) -> None:
        if len(self.layout) != 2 or len(self.data) != 2:
            raise VerifyException("sg_map: wi_layout and wi_data must have two entries each")
        if any(v <= 0 for v in self.layout + self.data):
            raise VerifyException(f"sg_map: wi_layout {list(self.layout)} and wi_data {list(self.data)} must be "
                                  f"positive")
        if self.data[0] > 1 and self.data[1] > 1:
            raise VerifyException("sg_map: wi_data elements must come from one contiguous dimension")

    def fragment_shape(self, shape: Sequence[int]) -> tuple[int, int]:
        """Per-lane fragment ``[n_distribution_units, wi_data_size]`` of a tensor ``shape``."""
        rows, cols = (1, shape[0]) if len(shape) == 1 else (shape[0], shape[1])
        lay, dat = self.layout, self.data
        if rows % (lay[0] * dat[0]) or cols % (lay[1] * dat[1]):
            raise VerifyException(f"sg_map {list(lay)}x{list(dat)} does not divide tensor {list(shape)}")
        units = (rows * cols) // (lay[0] * lay[1] * dat[0] * dat[1])
        return units, dat[0] * dat[1]


@dataclass(frozen=True, init=False)
class _TdescEncoding(ParametrizedAttribute):
    """A tensor_desc encoding: its ``memory_space`` (``global`` or ``slm``) comes first,
    the encoding's own parameters after it (xDSL reads parent annotations first).

    A dataclass itself, so that the encodings' equality and hash (the dataclass ones
    xDSL derives per attribute class) include ``memory_space``: without it an slm
    encoding equalled its global twin, and a cache keyed on descriptor types gave an
    slm scatter the global descriptor."""

    memory_space: StringAttr

    @property
    def space(self) -> str:
        return self.memory_space.data

    def print_parameters(self, printer: Printer) -> None:
        """Only the fields that differ from their defaults (``<>`` for none)."""
        parts = [f"memory_space = {self.space}"] if self.space != "global" else []
        printer.print_string("<" + ", ".join(parts + self.other_fields()) + ">")

    def other_fields(self) -> list[str]:
        raise NotImplementedError


@irdl_attr_definition
class BlockTdescAttr(_TdescEncoding):
    """``#xegpu.block_tdesc_attr<memory_space = global, array_length = 1, boundary_check = true>``."""

    name = "xegpu.block_tdesc_attr"
    array_length: IntAttr
    boundary_check: BoolAttr

    def __init__(self, memory_space: str = "global", array_length: int = 1, boundary_check: bool = True):
        super().__init__(StringAttr(memory_space), IntAttr(array_length), BoolAttr.from_bool(boundary_check))

    @property
    def arr_len(self) -> int:
        return self.array_length.data

    @property
    def checks_bounds(self) -> bool:
        return bool(self.boundary_check.value.data)

    def is_default(self) -> bool:
        return self.space == "global" and self.arr_len == 1 and self.checks_bounds

    def other_fields(self) -> list[str]:
        return ([f"array_length = {self.arr_len}"] if self.arr_len != 1 else []) + \
            ([] if self.checks_bounds else ["boundary_check = false"])

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        return list(BlockTdescAttr(**parse_fields(parser, _read_block_field)).parameters)

    def verify(self) -> None:
        if self.space not in ("global", "slm"):
            raise VerifyException(f"block_tdesc_attr: memory_space must be global or slm, got {self.space}")
        if self.arr_len < 1:
            raise VerifyException("block_tdesc_attr: array_length must be >= 1")


_DEFAULT_BLOCK_ATTR: list = []


def _default_block_attr() -> BlockTdescAttr:
    """The default block encoding (attributes are immutable, so one instance serves every
    descriptor type without an encoding; building one per query cost ~1 ms, a tenth of
    compiling a large tile's thousands of descriptors)."""
    if not _DEFAULT_BLOCK_ATTR:
        _DEFAULT_BLOCK_ATTR.append(BlockTdescAttr())
    return _DEFAULT_BLOCK_ATTR[0]


@dataclass(frozen=True, init=False)
class _EnumAttr(ParametrizedAttribute):
    """``#xegpu.<name><word>`` holding one word of ``VALUES`` (a dataclass, so that the
    word is part of equality and hash: see :class:`_TdescEncoding`)."""

    VALUES: ClassVar[tuple[str, ...]] = ()
    value: StringAttr

    def __init__(self, value: str):
        super().__init__(StringAttr(value))

    @property
    def word(self) -> str:
        return self.value.data

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.word}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            word = parser.parse_optional_str_literal() or parser.parse_identifier()
        if word not in cls.VALUES:
            parser.raise_error(f"{cls.name}: expected one of {', '.join(cls.VALUES)}, got '{word}'")
        return [StringAttr(word)]

    def verify(self) -> None:
        if self.word not in self.VALUES:
            raise VerifyException(f"{self.name}: expected one of {', '.join(self.VALUES)}, got '{self.word}'")


@irdl_attr_definition
class CacheHintAttr(_EnumAttr):
    """``#xegpu.cache_hint<cached>``."""

    name = "xegpu.cache_hint"
    VALUES: ClassVar[tuple[str, ...]] = ("cached", "uncached", "streaming", "read_invalidate", "write_back",
                                         "write_through")


@irdl_attr_definition
class MemorySpaceAttr(_EnumAttr):
    """``#xegpu.memory_space<slm>``."""

    name = "xegpu.memory_space"
    VALUES: ClassVar[tuple[str, ...]] = ("global", "slm")


@irdl_attr_definition
class FenceScopeAttr(_EnumAttr):
    """``#xegpu.fence_scope<workgroup>``."""

    name = "xegpu.fence_scope"
    VALUES: ClassVar[tuple[str, ...]] = ("workgroup", "gpu")


CHUNK_SIZES = (1, 2, 3, 4, 8, 16, 32, 64)
SCATTER_MAX_BYTES = 512


@irdl_attr_definition
class ScatterTdescAttr(_TdescEncoding):
    """``#xegpu.scatter_tdesc_attr<memory_space = slm, chunk_size = 8>``: marks a
    scattered tensor_desc (one offset per lane, ``chunk_size`` elements per offset)."""

    name = "xegpu.scatter_tdesc_attr"
    chunk_size: IntAttr

    def __init__(self, memory_space: str = "global", chunk_size: int = 1):
        super().__init__(StringAttr(memory_space), IntAttr(chunk_size))

    @property
    def chunk(self) -> int:
        return self.chunk_size.data

    def other_fields(self) -> list[str]:
        return [f"chunk_size = {self.chunk}"] if self.chunk != 1 else []

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        fields = parse_fields(parser, _read_scatter_field)
        return [StringAttr(fields.get("memory_space", "global")), IntAttr(fields.get("chunk_size", 1))]

    def verify(self) -> None:
        if self.space not in ("global", "slm"):
            raise VerifyException(f"scatter_tdesc_attr: memory_space must be global or slm, got {self.space}")
        if self.chunk not in CHUNK_SIZES:
            raise VerifyException(f"scatter_tdesc_attr: chunk_size {self.chunk} is not one of "
                                  f"{', '.join(map(str, CHUNK_SIZES))}")


LAYOUT_FIELDS = ("sg_layout", "sg_data", "inst_data", "lane_layout", "lane_data", "order")


@irdl_attr_definition
class LayoutAttr(ParametrizedAttribute):
    """``#xegpu.layout<sg_layout = [8, 4], sg_data = [32, 64], inst_data = [8, 16],
    lane_layout = [1, 16], lane_data = [1, 1], order = [1, 0]>``; every field optional
    (an empty list means absent)."""

    name = "xegpu.layout"
    sg_layout: ArrayAttr[IntAttr]
    sg_data: ArrayAttr[IntAttr]
    inst_data: ArrayAttr[IntAttr]
    lane_layout: ArrayAttr[IntAttr]
    lane_data: ArrayAttr[IntAttr]
    order: ArrayAttr[IntAttr]

    def __init__(self, sg_layout: Sequence[int] = (), sg_data: Sequence[int] = (), inst_data: Sequence[int] = (),
                 lane_layout: Sequence[int] = (), lane_data: Sequence[int] = (), order: Sequence[int] = ()):
        super().__init__(*(ArrayAttr(IntAttr(v) for v in f)
                           for f in (sg_layout, sg_data, inst_data, lane_layout, lane_data, order)))

    def field(self, name: str) -> tuple[int, ...]:
        return ints(getattr(self, name))

    @property
    def rank(self) -> int:
        return max(len(self.field(f)) for f in LAYOUT_FIELDS)

    @property
    def lanes(self) -> int:
        n = 1
        for v in self.field("lane_layout"):
            n *= v
        return n

    def print_parameters(self, printer: Printer) -> None:
        parts = [f"{f} = {print_int_list(self.field(f))}" for f in LAYOUT_FIELDS if self.field(f)]
        printer.print_string("<" + ", ".join(parts) + ">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        fields: dict[str, list[int]] = {}
        with parser.in_angle_brackets():
            key = parser.parse_optional_identifier()
            while key is not None:
                if key not in LAYOUT_FIELDS:
                    parser.raise_error(f"unknown layout field '{key}' (expected {', '.join(LAYOUT_FIELDS)})")
                parser.parse_punctuation("=")
                fields[key] = parse_int_list(parser)
                key = parser.parse_identifier() if parser.parse_optional_punctuation(",") else None
        return [ArrayAttr(IntAttr(v) for v in fields.get(f, ())) for f in LAYOUT_FIELDS]

    def verify(self) -> None:
        present = {f: self.field(f) for f in LAYOUT_FIELDS if self.field(f)}
        ranks = {len(v) for v in present.values()}
        if len(ranks) > 1:
            raise VerifyException("layout: all fields must have the same rank, got "
                                  + ", ".join(f"{k} {list(v)}" for k, v in present.items()))
        if any(x <= 0 for f, v in present.items() if f != "order" for x in v):
            raise VerifyException("layout: sizes must be positive")
        if ("sg_layout" in present) != ("sg_data" in present):
            raise VerifyException("layout: sg_layout and sg_data go together; give both or neither")
        if ("lane_layout" in present) != ("lane_data" in present):
            raise VerifyException("layout: lane_layout and lane_data go together; give both or neither")
        if not present.keys() & {"sg_layout", "inst_data", "lane_layout"}:
            raise VerifyException("layout: give at least one of sg_layout, inst_data or lane_layout")
        if "order" in present and not present.keys() & {"sg_layout", "lane_layout"}:
            raise VerifyException("layout: order linearizes subgroup or lane ids; it needs sg_layout or lane_layout")
        order = present.get("order")
        if order is not None and sorted(order) != list(range(len(order))):
            legal = "[1, 0] or [0, 1]" if len(order) == 2 else f"a permutation of 0..{len(order) - 1}"
            raise VerifyException(f"layout: order must be {legal}, got {list(order)}")
        lane_data = present.get("lane_data", ())
        if sum(1 for d in lane_data if d > 1) > 1:
            raise VerifyException(f"layout: lane_data {list(lane_data)} must take elements from one dimension only")
        self._verify_divisibility(present)

    def _verify_divisibility(self, present: dict[str, tuple[int, ...]]) -> None:
        sg, inst = present.get("sg_data"), present.get("inst_data")
        if sg and inst and any(s % i for s, i in zip(sg, inst)):
            raise VerifyException(f"layout: inst_data {list(inst)} must divide sg_data {list(sg)}")
        inner = inst or sg
        if inner and "lane_layout" in present:
            unit = [a * b for a, b in zip(present["lane_layout"], present["lane_data"])]
            if any(x % u for x, u in zip(inner, unit)):
                which = "inst_data" if inst else "sg_data"
                raise VerifyException(f"layout: {which} {list(inner)} must be divisible by lane_layout*lane_data "
                                      f"{unit}")

    def check_shape(self, shape: Sequence[int], what: str) -> None:
        """The workgroup distribution rule: per dim, the size is a multiple of
        sg_layout*sg_data or equals sg_data (broadcast); without sg_layout the size is
        a multiple of lane_layout*lane_data."""
        if self.rank != len(shape):
            raise VerifyException(f"{what}: layout rank {self.rank} differs from the shape {list(shape)}")
        sl, sd = self.field("sg_layout"), self.field("sg_data")
        for i, size in enumerate(shape):
            if sl and size % (sl[i] * sd[i]) and size != sd[i]:
                raise VerifyException(f"{what}: dim {i} size {size} must be a multiple of sg_layout*sg_data = "
                                      f"{sl[i] * sd[i]} or equal sg_data {sd[i]}")
        ll, ld = self.field("lane_layout"), self.field("lane_data")
        if ll and not sl and not self.field("inst_data"):
            for i, size in enumerate(shape):
                if size % (ll[i] * ld[i]):
                    raise VerifyException(f"{what}: dim {i} size {size} must be a multiple of lane_layout*lane_data "
                                          f"= {ll[i] * ld[i]}")


@irdl_attr_definition
class SliceAttr(ParametrizedAttribute):
    """``#xegpu.slice<#xegpu.layout<...>, dims = [1]>``: the layout of a value reduced
    along ``dims`` of its parent layout (also accepts the RFC's ``<#layout, 1>``)."""

    name = "xegpu.slice"
    parent: Attribute
    dims: ArrayAttr[IntAttr]

    def __init__(self, parent: Attribute, dims: Sequence[int]):
        super().__init__(parent, ArrayAttr(IntAttr(d) for d in dims))

    dim_list = int_tuple("dims")

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.parent)
        printer.print_string(f", dims = {print_int_list(self.dim_list)}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            parent = parser.parse_attribute()
            parser.parse_punctuation(",")
            if parser.parse_optional_keyword("dims") is not None:
                parser.parse_punctuation("=")
            if parser._current_token.text == "[":  # noqa: SLF001
                dims = parse_int_list(parser)
            else:
                dims = [parser.parse_integer()]
        return [parent, ArrayAttr(IntAttr(d) for d in dims)]

    @property
    def rank(self) -> int:
        """Rank of the sliced value: the parent's rank minus the sliced dims."""
        return layout_rank(self.parent) - len(self.dim_list)

    def verify(self) -> None:
        if not isinstance(self.parent, (LayoutAttr, SliceAttr)):
            raise VerifyException(f"slice: parent must be #xegpu.layout or #xegpu.slice, got {self.parent}")
        rank, dims = layout_rank(self.parent), list(self.dim_list)
        if not dims:
            raise VerifyException("slice: dims must name at least one dim of the parent layout")
        if len(set(dims)) != len(dims) or any(not 0 <= d < rank for d in dims):
            raise VerifyException(f"slice: dims {dims} must be distinct dims of the rank-{rank} parent layout "
                                  f"(0..{rank - 1})")


def layout_rank(attr: Attribute) -> int:
    """Rank of the values a ``#xegpu.layout`` or ``#xegpu.slice`` describes."""
    return attr.rank


# ----------------------------------------------------------------------------- types
@irdl_attr_definition
class TensorDescType(ParametrizedAttribute, TypeAttribute):
    """``!xegpu.tensor_desc<8x16xf16, #xegpu.block_tdesc_attr<...>, #xegpu.sg_map<...>>``.

    ``encoding`` is a block_tdesc_attr (block descriptor) or a scatter_tdesc_attr
    (scattered descriptor); ``sg_map`` holds the distribution: an sg_map, a layout or a
    slice."""

    name = "xegpu.tensor_desc"
    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    encoding: Attribute
    sg_map: Attribute

    def __init__(self, shape: Sequence[int], element_type: Attribute, encoding: Attribute | None = None,
                 sg_map: Attribute | None = None):
        if isinstance(encoding, BlockTdescAttr) and encoding.is_default():
            encoding = None
        super().__init__(ArrayAttr(IntAttr(v) for v in shape), element_type,
                         encoding if encoding is not None else NoneAttr(),
                         sg_map if sg_map is not None else NoneAttr())

    def get_shape(self) -> tuple[int, ...]:
        return ints(self.shape)

    @property
    def block_attr(self) -> BlockTdescAttr:
        return self.encoding if isinstance(self.encoding, BlockTdescAttr) else _default_block_attr()

    @property
    def scatter_attr(self) -> ScatterTdescAttr | None:
        return self.encoding if isinstance(self.encoding, ScatterTdescAttr) else None

    @property
    def is_scattered(self) -> bool:
        return self.scatter_attr is not None

    @property
    def memory_space(self) -> str:
        return self.scatter_attr.space if self.scatter_attr is not None else self.block_attr.space

    @property
    def map(self) -> SGMapAttr | None:
        return self.sg_map if isinstance(self.sg_map, SGMapAttr) else None

    @property
    def layout(self) -> Attribute | None:
        """The distribution attribute (sg_map, layout or slice), or None."""
        return None if isinstance(self.sg_map, NoneAttr) else self.sg_map

    def with_sg_map(self, sg_map: Attribute | None) -> "TensorDescType":
        return _with_sg_map(self, sg_map)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + "x".join(str(d) for d in self.get_shape()) + "x")
        printer.print_attribute(self.element_type)
        for extra in (self.encoding, self.sg_map):
            if not isinstance(extra, NoneAttr):
                printer.print_string(", ")
                printer.print_attribute(extra)
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            shape, elem = parser.parse_ranked_shape()
            encoding: Attribute = NoneAttr()
            sg_map: Attribute = NoneAttr()
            while parser.parse_optional_punctuation(",") is not None:
                attr = parser.parse_attribute()
                if isinstance(attr, (SGMapAttr, LayoutAttr, SliceAttr)):
                    sg_map = attr
                else:
                    encoding = attr
        if isinstance(encoding, BlockTdescAttr) and encoding.is_default():
            encoding = NoneAttr()
        return [ArrayAttr(IntAttr(v) for v in shape), elem, encoding, sg_map]

    def verify(self) -> None:
        shape = self.get_shape()
        if len(shape) not in (1, 2) or any(d <= 0 for d in shape):
            raise VerifyException(f"tensor_desc: shape must be 1-D or 2-D and static, got {list(shape)}")
        if not isinstance(self.encoding, (NoneAttr, BlockTdescAttr, ScatterTdescAttr)):
            raise VerifyException(f"tensor_desc: encoding must be a block_tdesc_attr or scatter_tdesc_attr, "
                                  f"got {self.encoding}")
        if self.scatter_attr is not None:
            self._verify_scatter(shape)
            self._verify_scatter_lanes(shape)
        if self.map is not None:
            self.map.fragment_shape(shape)
        elif isinstance(self.sg_map, LayoutAttr):
            self.sg_map.check_shape(shape, "tensor_desc")
        elif not isinstance(self.sg_map, (NoneAttr, SliceAttr)):
            raise VerifyException(f"tensor_desc: distribution must be an sg_map, layout or slice, got {self.sg_map}")

    def _verify_scatter_lanes(self, shape: tuple[int, ...]) -> None:
        """A lane of a scattered access owns one row and reads it 32 bits at a time, so a
        layout's lane_data is 1 across rows and one 32-bit unit along the row."""
        if not isinstance(self.sg_map, LayoutAttr) or not self.sg_map.field("lane_data"):
            return
        lane_data, unit = self.sg_map.field("lane_data"), max(1, 32 // element_bits(self.element_type))
        if len(shape) == 2 and lane_data[0] != 1:
            raise VerifyException(f"tensor_desc: lane_data {list(lane_data)} cannot map over non-contiguous "
                                  f"scattered rows; lane_data[0] must be 1")
        if lane_data[-1] != unit:
            raise VerifyException(f"tensor_desc: lane_data {list(lane_data)} must give each lane one 32-bit unit "
                                  f"of contiguous elements: lane_data[{len(shape) - 1}] = {unit} for "
                                  f"{self.element_type}")

    def _verify_scatter(self, shape: tuple[int, ...]) -> None:
        chunk = self.scatter_attr.chunk
        bits = element_bits(self.element_type)
        if chunk == 1 and len(shape) != 1:
            raise VerifyException(f"tensor_desc: a scattered descriptor without chunk_size is 1-D [lanes], got "
                                  f"{list(shape)}; for 2-D set chunk_size = {shape[-1]}")
        if chunk > 1 and (len(shape) != 2 or shape[1] != chunk):
            raise VerifyException(f"tensor_desc: with chunk_size = {chunk} the shape must be [lanes, {chunk}], "
                                  f"got {list(shape)}")
        total = shape[0] * chunk * bits // 8
        if total > SCATTER_MAX_BYTES:
            raise VerifyException(f"tensor_desc: a scattered access covers {total} bytes, more than the "
                                  f"{SCATTER_MAX_BYTES}-byte limit; use chunk_size <= "
                                  f"{max(1, SCATTER_MAX_BYTES * 8 // (shape[0] * bits))}")
        if chunk > 1 and bits < 32 and (chunk * bits) % 32:
            raise VerifyException(f"tensor_desc: chunk_size {chunk} of {bits}-bit elements is not 32-bit aligned "
                                  f"per lane; use a multiple of {32 // bits}")


@lru_cache(maxsize=1024)
def _with_sg_map(t: TensorDescType, sg_map: Attribute | None) -> TensorDescType:
    """``t`` with ``sg_map``, made once per pair: an attribute is immutable, and the SIMT
    pass gives every descriptor of a GEMM one of a few (~60 us to build each)."""
    enc = t.encoding if not isinstance(t.encoding, NoneAttr) else None
    return TensorDescType(t.get_shape(), t.element_type, enc, sg_map)


@irdl_attr_definition
class NbarrierType(ParametrizedAttribute, TypeAttribute):
    """``!xegpu.nbarrier``: one named barrier."""

    name = "xegpu.nbarrier"

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        if parser._current_token.text == "<":  # noqa: SLF001
            parser.raise_error("!xegpu.nbarrier takes no parameters")
        return []
