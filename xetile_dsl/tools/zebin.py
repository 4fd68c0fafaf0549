"""`Zebin`: what ocloc wrote, read from the ELF itself.

A zebin holds one ``.text.<kernel>`` section of machine code per kernel and a ``.ze_info``
YAML section with each kernel's execution environment (SIMD width, GRF count, spill size).
See docs/tools.md and the Xe codegen reference §0.
"""
from __future__ import annotations

from functools import cached_property
from pathlib import Path

import yaml

from .disasm import disassemble_zebin
from .elf import Section, Symbol, read_sections, read_symbols

#: The one undefined symbol every kernel has; anything else undefined is an unresolved call.
PATCH_SYMBOL = "__INTEL_PATCH_CROSS_THREAD_OFFSET_OFF_R0"
_TEXT = ".text."


class Zebin:
    """A parsed zebin.  ``device`` is the ocloc device it was built for (if known)."""

    def __init__(self, data: bytes, device: str | None = None, build_log: str = "") -> None:
        self.data = bytes(data)
        self.device = device
        self.build_log = build_log
        self._sections: list[Section] = read_sections(self.data)
        self._isa: dict[str, str] = {}

    @classmethod
    def from_file(cls, path: str | Path, device: str | None = None) -> "Zebin":
        """Read a zebin from disk."""
        return cls(Path(path).read_bytes(), device=device)

    @property
    def sections(self) -> dict[str, bytes]:
        """Section name -> contents."""
        return {s.name: s.data for s in self._sections if s.name}

    @property
    def kernels(self) -> list[str]:
        """Kernel names, from the ``.text.<kernel>`` sections."""
        return [s.name[len(_TEXT):] for s in self._sections
                if s.name.startswith(_TEXT) and s.name != ".text.Intel_Symbol_Table_Void_Program"]

    @cached_property
    def ze_info(self) -> dict:
        """The ``.ze_info`` YAML metadata, parsed."""
        raw = self.sections.get(".ze_info")
        if raw is None:
            raise KeyError("zebin has no .ze_info section")
        return yaml.safe_load(raw.decode("utf-8")) or {}

    def _kernel_info(self, kernel: str) -> dict:
        """The ``.ze_info`` entry for ``kernel``."""
        for entry in self.ze_info.get("kernels", []):
            if entry.get("name") == kernel:
                return entry
        raise KeyError(f"kernel {kernel!r} not in zebin (kernels: {self.kernels})")

    def execution_env(self, kernel: str) -> dict:
        """``execution_env`` of ``kernel``: simd_size, grf_count, has_dpas, spill_size, …"""
        return dict(self._kernel_info(kernel).get("execution_env", {}))

    def spill_size(self, kernel: str) -> int:
        """Bytes of register spill reported by IGC (0 when the key is absent)."""
        return int(self.execution_env(kernel).get("spill_size", 0))

    def text(self, kernel: str) -> bytes:
        """The raw machine code of ``kernel`` (its ``.text.<kernel>`` section)."""
        try:
            return self.sections[_TEXT + kernel]
        except KeyError:
            raise KeyError(f"kernel {kernel!r} not in zebin (kernels: {self.kernels})") from None

    def symbols(self) -> list[Symbol]:
        """All `.symtab` entries."""
        return read_symbols(self.data, self._sections)

    def undefined_symbols(self) -> list[str]:
        """Undefined symbols other than IGC's patch symbol: each is an unresolved call."""
        return sorted({s.name for s in self.symbols() if s.undefined and s.name != PATCH_SYMBOL})

    def isa_text(self, kernel: str) -> str:
        """Disassembled ISA of ``kernel`` (ocloc's bundled IGA, else Debian's iga64)."""
        if kernel not in self._isa:
            self.text(kernel)  # raises a clear KeyError for an unknown kernel
            self._isa.update(disassemble_zebin(self, kernel))
        return self._isa[kernel]

    def __repr__(self) -> str:
        return f"Zebin(device={self.device!r}, kernels={self.kernels}, {len(self.data)} bytes)"
