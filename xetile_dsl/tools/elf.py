"""A tiny ELF64 little-endian reader: section headers and the symbol table.

Enough to read Intel's zebin (an ELF64 relocatable file) without binutils or new
dependencies.  Only what the ISA checks need is decoded.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import ToolError

_SHT_SYMTAB = 2
_SHN_UNDEF = 0
_STB_NAMES = {0: "LOCAL", 1: "GLOBAL", 2: "WEAK"}


class ElfError(ToolError, ValueError):
    """The bytes are not an ELF64 little-endian file we can read."""


@dataclass(frozen=True)
class Section:
    """One section header plus its bytes."""

    name: str
    type: int
    offset: int
    size: int
    link: int
    entsize: int
    data: bytes


@dataclass(frozen=True)
class Symbol:
    """One `.symtab` entry; ``shndx == 0`` means undefined."""

    name: str
    bind: str
    type: int
    shndx: int
    value: int
    size: int

    @property
    def undefined(self) -> bool:
        """True for an undefined (imported) symbol."""
        return self.shndx == _SHN_UNDEF and bool(self.name)


def _header(data: bytes) -> tuple[int, int, int, int]:
    """(shoff, shentsize, shnum, shstrndx) from the ELF header, after sanity checks."""
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise ElfError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ElfError("only ELF64 little-endian is supported")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shentsize != 64 or shoff + shnum * 64 > len(data):
        raise ElfError("truncated or malformed section header table")
    return shoff, shentsize, shnum, shstrndx


def _cstr(blob: bytes, off: int) -> str:
    """The NUL-terminated string at ``off`` in a string table."""
    end = blob.find(b"\0", off)
    return blob[off : end if end >= 0 else len(blob)].decode("utf-8", "replace")


def read_sections(data: bytes) -> list[Section]:
    """All section headers of an ELF64 file, in order, with their contents."""
    shoff, shentsize, shnum, shstrndx = _header(data)
    raw = []
    for i in range(shnum):
        name, typ, _flags, _addr, off, size, link, _info, _align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize
        )
        raw.append((name, typ, off, size, link, entsize))
    strtab = raw[shstrndx] if shstrndx < len(raw) else None
    names = data[strtab[2] : strtab[2] + strtab[3]] if strtab else b""
    return [
        Section(_cstr(names, n), t, o, s, lk, es, data[o : o + s] if t != 8 else b"")
        for n, t, o, s, lk, es in raw
    ]


def read_symbols(data: bytes, sections: list[Section] | None = None) -> list[Symbol]:
    """The entries of every SYMTAB section (names resolved through its linked strtab)."""
    sections = sections if sections is not None else read_sections(data)
    out: list[Symbol] = []
    for sec in sections:
        if sec.type != _SHT_SYMTAB or not sec.entsize:
            continue
        names = sections[sec.link].data if sec.link < len(sections) else b""
        for off in range(0, sec.size - sec.entsize + 1, sec.entsize):
            name, info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", sec.data, off)
            out.append(Symbol(_cstr(names, name), _STB_NAMES.get(info >> 4, str(info >> 4)),
                              info & 0xF, shndx, value, size))
    return out
