"""Earlier-RFC spellings of the tensor_desc encodings, parsed into the current attributes.

* ``#xegpu.tdesc_attr<memory_space = slm, boundary_check = false>`` (the XeGPU RFC's SIMT
  section, the XeGPU op reference) -> ``#xegpu.block_tdesc_attr<...>``;
* ``#xegpu.tdesc_attr<memory_space = slm, scattered = true>`` -> ``#xegpu.scatter_tdesc_attr<...>``;
* ``#xegpu.scattered_tdesc_attr<...>`` (op reference) -> ``#xegpu.scatter_tdesc_attr<...>``.

``memory_scope`` (xegpu-rfc-earlier.md) is read as ``memory_space``, ``shared`` as ``slm``,
and ``chunk_size_per_lane`` as ``chunk_size``.  Nothing of these aliases survives parsing:
the parser gets the current attribute and prints it in the current spelling.
"""
from __future__ import annotations

from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser

from ._asm import checked
from ._syntax import parse_int_value
from ._xegpu_attrs import BlockTdescAttr, ScatterTdescAttr

_KEYS = {"memory_space": "memory_space", "memory_scope": "memory_space", "boundary_check": "boundary_check",
         "array_length": "array_length", "scattered": "scattered", "chunk_size": "chunk_size",
         "chunk_size_per_lane": "chunk_size"}


def _parse_fields(parser: AttrParser, what: str) -> dict[str, object]:
    fields: dict[str, object] = {}
    with parser.in_angle_brackets():
        key = parser.parse_optional_identifier()
        while key is not None:
            if key == "sg":
                parser.raise_error(f"{what}: an sg_map inside the encoding is not supported; put it in the "
                                   "tensor_desc type: !xegpu.tensor_desc<16xbf16, #xegpu.block_tdesc_attr<..>, "
                                   "#xegpu.sg_map<..>>")
            if key not in _KEYS:
                parser.raise_error(f"{what}: unknown field '{key}' (expected {', '.join(sorted(set(_KEYS)))})")
            parser.parse_punctuation("=")
            name = _KEYS[key]
            if name == "memory_space":
                word = parser.parse_optional_str_literal() or parser.parse_identifier()
                fields[name] = "slm" if word in ("slm", "shared") else "global" if word == "global" else word
            elif name in ("boundary_check", "scattered"):
                fields[name] = parser.parse_boolean()
            else:
                fields[name] = parse_int_value(parser)
            key = parser.parse_identifier() if parser.parse_optional_punctuation(",") else None
    return fields


def _scatter(parser: AttrParser, fields: dict[str, object], what: str) -> ScatterTdescAttr:
    extra = sorted(set(fields) & {"boundary_check", "array_length"})
    if extra:
        parser.raise_error(f"{what}: {', '.join(extra)} apply to block descriptors, not scattered ones")
    return checked(parser, lambda: ScatterTdescAttr(str(fields.get("memory_space", "global")),
                                                    int(fields.get("chunk_size", 1))))


class _Alias(ParametrizedAttribute):
    """Parses into another attribute; never instantiated itself."""

    target: Attribute

    @classmethod
    def new(cls, params):  # noqa: ANN001 -- xDSL's hook after parse_parameters
        return params[0]


@irdl_attr_definition
class TdescAttrAlias(_Alias):
    name = "xegpu.tdesc_attr"

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        what = "tdesc_attr"
        fields = _parse_fields(parser, what)
        if fields.pop("scattered", False):
            return [_scatter(parser, fields, what)]
        if "chunk_size" in fields:
            parser.raise_error(f"{what}: chunk_size needs scattered = true")
        return [checked(parser, lambda: BlockTdescAttr(str(fields.get("memory_space", "global")),
                                                       int(fields.get("array_length", 1)),
                                                       bool(fields.get("boundary_check", True))))]


@irdl_attr_definition
class ScatteredTdescAttrAlias(_Alias):
    name = "xegpu.scattered_tdesc_attr"

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        what = "scattered_tdesc_attr"
        fields = _parse_fields(parser, what)
        fields.pop("scattered", None)
        return [_scatter(parser, fields, what)]
