"""Reading IGA disassembly (``CompiledKernel.asm["isa"]``): instructions, what each one is,
where the loops are, and the shapes of 2D block messages.

Every statement here is about the text IGA prints for PVC/ARC machine code (ocloc 26.27 /
IGC 2.40, the Xe codegen reference sections 0, 3.2, 5.3, 5.5):

* an instruction is ``[(pred)] opcode[.sub] [(N|Mk)] [(cond)flag] dst src... {swsb}``;
* a send's IGA comment names its message, ``// wr:1+0, rd:8; load_block2d.ugm.d16v.a64``:
  ``d16v`` is a VNNI-transformed read, ``d32t`` a transposed one, and a ``null``
  destination makes a 2D block read a prefetch;
* a 2D block message's shape is not in the instruction: it is dword 7 of the address
  payload, ``(W-1) | (H-1) << 8 | (N-1) << 16``, written by earlier ``mov``\\ s, which
  :class:`PayloadTracker` follows through the listing;
* a loop is a label and a later backward ``jmpi``/``goto``/``while`` to it.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass

#: instruction classes, in the order reports print them
KINDS = ("dpas", "load2d", "prefetch", "store2d", "gather", "scatter", "block1d", "slm",
         "sync", "scratch", "send_other", "other")

#: what each class holds, for report legends
KIND_HELP = {
    "dpas": "DPAS (systolic matrix multiply-accumulate)",
    "load2d": "2D block loads into registers (load_block2d with a destination)",
    "prefetch": "2D block prefetches (load_block2d to null)",
    "store2d": "2D block stores",
    "gather": "per-lane global loads (one address per lane)",
    "scatter": "per-lane global stores and atomics",
    "block1d": "1D block (transposed, one address per subgroup) global loads/stores",
    "slm": "shared local memory messages",
    "sync": "sync.*, barrier signals and fences",
    "scratch": "scratch (register spill/fill) messages",
    "send_other": "other messages (end of thread, legacy data port, ...)",
    "other": "everything else: ALU, moves, address arithmetic, branches",
}

_LABEL = re.compile(r"^\s*([A-Za-z_.$][\w.$]*):\s*$")
_INSTR = re.compile(r"^\s*(?:\((?P<pred>[^)]*)\)\s+)?(?P<op>[a-z][\w.]*)\s*"
                    r"(?:\((?P<exec>\d+)\|M\d+\)\s*)?(?:\([a-z]+\)\S+\s+)?(?P<rest>.*)$")
_DPAS = re.compile(r"\bdpasw?\b")
_BACK_BRANCH = re.compile(r"\b(?:jmpi|goto|while)\b.*?\b([A-Za-z_.$][\w.$]*)\s*(?://.*)?$")
_LSC = re.compile(r"^(?P<op>load|store|atomic_\w+)\.(?P<sfid>ugm|ugml|slm|tgm)\.(?P<data>d\d+\w*)")
_BLOCK2D = re.compile(r"^(?:load|store)_block2d\.ugm\.d(?P<bits>\d+)(?P<variant>[vt]?)\.")
_RD = re.compile(r"\brd:(\d+)")

#: bytes of each IGA operand type
TYPE_BYTES = {"b": 1, "ub": 1, "w": 2, "uw": 2, "hf": 2, "bf": 2, "d": 4, "ud": 4, "f": 4,
              "tf32": 4, "q": 8, "uq": 8, "df": 8}


@dataclass(frozen=True)
class Instruction:
    """One instruction line of an IGA listing.

    ``message`` is a send's IGA comment after ``rd:N;`` (e.g. ``load_block2d.ugm.d16.a64``),
    empty for other instructions; ``kind`` is one of :data:`KINDS`."""

    text: str
    opcode: str
    exec_size: int
    operands: tuple[str, ...]
    message: str
    kind: str
    predicate: str = ""  # "(W&f0.0)" -> "W&f0.0"; "W" alone is NoMask, not a condition

    @property
    def dst(self) -> str:
        return self.operands[0] if self.operands else ""

    @property
    def response_grfs(self) -> int:
        """Registers a send writes (IGA's ``rd:N``), 0 for other instructions."""
        m = _RD.search(self.text)
        return int(m.group(1)) if m else 0


def is_instruction_line(line: str) -> bool:
    """True for an instruction line: not blank, a label, a comment or the zero padding
    after the last instruction (which IGA decodes as ``illegal``)."""
    s = line.strip()
    return bool(s) and not _LABEL.match(line) and not s.startswith("//") and s != "illegal"


def _send_message(line: str) -> str:
    """A send's message from its IGA comment (``// wr:1+0, rd:8; <message>``)."""
    if "//" not in line:
        return ""
    comment = line.split("//", 1)[1]
    return comment.split(";", 1)[1].strip() if ";" in comment else comment.strip()


def classify(opcode: str, dst: str, message: str) -> str:
    """The class (one of :data:`KINDS`) of an instruction."""
    if opcode.startswith("dpas"):
        return "dpas"
    if opcode.startswith("sync."):
        return "sync"
    if not opcode.startswith("send"):
        return "other"
    return _classify_send(dst, message)


def _classify_send(dst: str, message: str) -> str:
    """The class of a send from its IGA message text."""
    if message.startswith("load_block2d"):
        return "prefetch" if dst == "null" else "load2d"
    if message.startswith("store_block2d"):
        return "store2d"
    if "barrier" in message or message.startswith("fence"):
        return "sync"
    if "scratch" in message:
        return "scratch"
    lsc = _LSC.match(message)
    if lsc is None:
        return "send_other"
    if lsc.group("sfid") == "slm":
        return "slm"
    if lsc.group("data").endswith("t"):  # transposed: one address, a block for the subgroup
        return "block1d"
    return "gather" if lsc.group("op") == "load" else "scatter"


def parse_line(line: str) -> Instruction | None:
    """The :class:`Instruction` of one listing line, None for labels, comments, blanks."""
    if not is_instruction_line(line):
        return None
    m = _INSTR.match(line)
    if m is None:
        return Instruction(line, "?", 0, (), "", "other", "")
    body = m.group("rest").split("//", 1)[0]
    operands = tuple(tok for tok in body.split() if not tok.startswith("{"))
    opcode = m.group("op")
    message = _send_message(line) if opcode.startswith("send") else ""
    dst = operands[0] if operands else ""
    return Instruction(line, opcode, int(m.group("exec") or 1), operands, message,
                       classify(opcode, dst, message), m.group("pred") or "")


def instructions(text: str) -> list[Instruction]:
    """The instructions of an IGA listing (or part of one), in order."""
    return [ins for ins in map(parse_line, text.splitlines()) if ins is not None]


# --- loops ------------------------------------------------------------------------------

def _loop_spans(lines: list[str]) -> list[tuple[int, int]]:
    """(label line, backward branch line) of every backward branch (``jmpi``/``while``/
    ``goto``) to an earlier label."""
    labels = {m.group(1): i for i, ln in enumerate(lines) if (m := _LABEL.match(ln))}
    spans = []
    for i, ln in enumerate(lines):
        m = _BACK_BRANCH.search(ln)
        if m and m.group(1) in labels and labels[m.group(1)] < i:
            spans.append((labels[m.group(1)], i))
    return spans


def _merged_spans(lines: list[str]) -> list[tuple[int, int]]:
    """One span per loop head: from the label to its last backward branch, in order."""
    ends: dict[int, int] = {}
    for start, end in _loop_spans(lines):
        ends[start] = max(end, ends.get(start, end))
    return sorted(ends.items())


def hot_loop(isa: str) -> str:
    """The instructions of the longest loop in ``isa``: from a label to the last backward
    branch (``jmpi``/``while``/``goto``) that targets it."""
    lines = isa.splitlines()
    spans = _loop_spans(lines)
    if not spans:
        raise ValueError("no backward branch (loop) found in the ISA")
    best = max(spans, key=lambda s: s[1] - s[0])
    return "\n".join(lines[best[0]:best[1] + 1])


_FORWARD_BRANCH = re.compile(r"^\s*\((?P<pred>[^)]*\bf\d[^)]*)\)\s+(?:jmpi|goto|brc)\b.*?"
                             r"\b(?P<label>[A-Za-z_.$][\w.$]*)\s*(?://.*)?$")


def skipped_lines(lines: list[str]) -> set[int]:
    """Indices of the lines that a conditional (flag-predicated) forward branch of
    ``lines`` to a later label of ``lines`` jumps over: in a loop, what an iteration that
    takes those branches does not run (e.g. a rarely needed rescale)."""
    labels = {m.group(1): i for i, ln in enumerate(lines) if (m := _LABEL.match(ln))}
    skipped: set[int] = set()
    for i, ln in enumerate(lines):
        m = _FORWARD_BRANCH.match(ln)
        if m and labels.get(m.group("label"), -1) > i:
            skipped.update(range(i + 1, labels[m.group("label")]))
    return skipped


def loops(isa: str) -> list[str]:
    """The instructions of each outermost loop of ``isa``, in program order (a loop the
    compiler ran in several copies shows as several loops)."""
    lines = isa.splitlines()
    spans = _merged_spans(lines)
    outer = [s for s in spans if not any(o != s and o[0] <= s[0] and s[1] <= o[1] for o in spans)]
    return ["\n".join(lines[a:b + 1]) for a, b in outer]


@dataclass(frozen=True)
class Loop:
    """A loop of a listing: its label, the listing line indices (0-based) of the label and
    of its last backward branch, and those lines."""

    label: str
    start: int
    end: int
    text: str


def innermost_loops(isa: str) -> list[Loop]:
    """Every loop of ``isa`` that contains no other loop, in program order."""
    lines = isa.splitlines()
    spans = _merged_spans(lines)
    inner = [s for s in spans if not any(o != s and s[0] <= o[0] and o[1] <= s[1] for o in spans)]
    return [Loop(_LABEL.match(lines[a]).group(1), a, b, "\n".join(lines[a:b + 1])) for a, b in inner]


def report_loops(isa: str) -> list[Loop]:
    """The loops a report describes, in program order: every innermost loop, and every
    loop holding DPAS whose nested loops hold none (ARC's K loop with the cold per-lane
    loops of its edge blocks inside: counted whole, the cold loops' instructions too)."""
    lines = isa.splitlines()
    spans = _merged_spans(lines)
    has_dpas = {s: any(_DPAS.search(ln) for ln in lines[s[0]:s[1] + 1]) for s in spans}

    def nested(s):
        return [o for o in spans if o != s and s[0] <= o[0] and o[1] <= s[1]]
    chosen = [s for s in spans if not nested(s) or (has_dpas[s] and not any(has_dpas[o] for o in nested(s)))]
    return [Loop(_LABEL.match(lines[a]).group(1), a, b, "\n".join(lines[a:b + 1])) for a, b in chosen]


# --- 2D block shapes ----------------------------------------------------------------------

_REG = re.compile(r"^r(?P<reg>\d+)(?:\.(?P<sub>\d+))?(?:<(?P<h>\d+)>)?(?::(?P<type>\w+))?$")
_SRC_REG = re.compile(r"^r(?P<reg>\d+)\.(?P<sub>\d+)<(?P<v>\d+);(?P<w>\d+),(?P<h>\d+)>:(?P<type>\w+)$")
_IMM = re.compile(r"^(?P<value>-?(?:0x[0-9A-Fa-f]+|[0-9.]+(?:e[-+]?\d+)?|inf|nan))(?::(?P<type>\w+))$")


@dataclass(frozen=True)
class BlockShape:
    """A 2D block message's shape: ``elem_bits``-bit elements, ``rows x cols`` per block,
    ``count`` blocks side by side; ``variant`` is "" (plain), "vnni" (transform, ``v``) or
    "transpose" (``t``)."""

    elem_bits: int
    rows: int
    cols: int
    count: int
    variant: str = ""

    def __str__(self) -> str:
        text = f"{self.elem_bits}b {self.rows}r{self.cols}x{self.count}c"
        return f"{text} {self.variant}" if self.variant else text


def _immediate_bits(text: str, type_name: str) -> int | None:
    """The bit pattern of an IGA immediate (floats by their IEEE bits), or None."""
    try:
        if text.startswith(("0x", "-0x")):
            value = int(text, 16)
        elif type_name in ("f", "hf", "df") or any(c in text for c in ".en"):
            value = struct.unpack("<I", struct.pack("<f", float(text)))[0]
        else:
            value = int(text)
    except (ValueError, OverflowError):
        return None
    return value & ((1 << (8 * TYPE_BYTES.get(type_name, 4))) - 1)


class PayloadTracker:
    """The known bytes of the register file, followed instruction by instruction in listing
    order, to read the shape dword of each 2D block message's address payload.

    Only what payload set-up needs is modelled: ``mov`` of an immediate, same-size ``mov``
    of registers (any regioning); every other write makes its bytes unknown.  Listing order
    is not execution order, but IGC sets up a payload before its send in the listing (in
    the loop, or before the loop for loop-invariant payloads)."""

    def __init__(self, grf_bytes: int) -> None:
        self.grf_bytes = grf_bytes
        self.known: dict[int, int] = {}  # byte address -> byte value

    def _address(self, reg: str, sub: str | None, type_name: str | None) -> int:
        return int(reg) * self.grf_bytes + int(sub or 0) * TYPE_BYTES.get(type_name or "ud", 4)

    def _write(self, addr: int, size: int, value: int | None) -> None:
        for i in range(size):
            if value is None:
                self.known.pop(addr + i, None)
            else:
                self.known[addr + i] = (value >> (8 * i)) & 0xFF

    def _read(self, addr: int, size: int) -> int | None:
        data = [self.known.get(addr + i) for i in range(size)]
        if any(b is None for b in data):
            return None
        return sum(b << (8 * i) for i, b in enumerate(data))

    def observe(self, ins: Instruction) -> None:
        """Update the register file for ``ins``."""
        if ins.kind == "dpas" or ins.opcode.startswith("send"):
            self._kill_destination(ins)
            return
        dst = _REG.match(ins.dst.split("(")[0]) if ins.dst else None
        if dst is None:
            return  # null, flags, address or control registers
        size = TYPE_BYTES.get(dst.group("type") or "ud", 4)
        stride = int(dst.group("h") or 1)
        base = self._address(dst.group("reg"), dst.group("sub"), dst.group("type"))
        values = self._mov_values(ins, size) if ins.opcode == "mov" else None
        for i in range(ins.exec_size):
            self._write(base + i * stride * size, size, values[i] if values else None)

    def _mov_values(self, ins: Instruction, size: int) -> list[int | None] | None:
        """The element values a ``mov`` writes, or None when not followed."""
        if len(ins.operands) < 2 or ins.predicate not in ("", "W"):
            return None  # a predicated move may not write
        src = ins.operands[1]
        imm = _IMM.match(src)
        if imm:
            return [_immediate_bits(imm.group("value"), imm.group("type"))] * ins.exec_size
        reg = _SRC_REG.match(src)
        if reg is None or TYPE_BYTES.get(reg.group("type"), 0) != size:
            return None
        base = self._address(reg.group("reg"), reg.group("sub"), reg.group("type"))
        v, w, h = int(reg.group("v")), int(reg.group("w")), int(reg.group("h"))
        return [self._read(base + ((i // w) * v + (i % w) * h) * size, size) for i in range(ins.exec_size)]

    def _kill_destination(self, ins: Instruction) -> None:
        """Forget what a send or dpas overwrites."""
        m = re.match(r"^r(\d+)", ins.dst)
        if m is None:
            return
        grfs = ins.response_grfs if ins.kind != "dpas" else _dpas_repeat(ins)
        self._write(int(m.group(1)) * self.grf_bytes, max(grfs, 1) * self.grf_bytes, None)

    def block_shape(self, ins: Instruction) -> BlockShape | None:
        """The shape of 2D block send ``ins`` from its payload's dword 7, None if unknown."""
        fmt = _BLOCK2D.match(ins.message)
        payload = re.match(r"^r(\d+)", ins.operands[1]) if len(ins.operands) > 1 else None
        if fmt is None or payload is None:
            return None
        word = self._read(int(payload.group(1)) * self.grf_bytes + 28, 4)
        if word is None:
            return None
        variant = {"v": "vnni", "t": "transpose"}[fmt.group("variant")] if fmt.group("variant") else ""
        return BlockShape(int(fmt.group("bits")), ((word >> 8) & 0xFF) + 1, (word & 0xFF) + 1,
                          ((word >> 16) & 0xF) + 1, variant)


def _dpas_repeat(ins: Instruction) -> int:
    """The repeat count R of ``dpas.8xR`` (rows of A and C), 1 if not printed."""
    m = re.match(r"dpasw?\.\d+x(\d+)", ins.opcode)
    return int(m.group(1)) if m else 1


#: DPAS A operand types as IGA prints them -> (the target's input type name, bits)
IGA_DPAS_TYPES = {"hf": ("f16", 16), "bf": ("bf16", 16), "b": ("i8", 8), "ub": ("u8", 8),
                  "tf32": ("tf32", 32), "s4": ("i4", 4), "u4": ("u4", 4)}


def dpas_work(ins: Instruction) -> tuple[str, int]:
    """(input type, multiply-accumulates) of one ``dpas.<depth>x<repeat> (<lanes>|M0)``:
    each of ``repeat`` rows times ``lanes`` columns sums ``depth`` dwords of A, each dword
    holding 32 / bits elements (K = 16 for f16, 32 for int8, 8 for tf32)."""
    m = re.match(r"dpasw?\.(\d+)x(\d+)", ins.opcode)
    depth, repeat = (int(m.group(1)), int(m.group(2))) if m else (8, 1)
    a_type = ins.operands[-1].rsplit(":", 1)[-1] if ins.operands else ""
    name, bits = IGA_DPAS_TYPES.get(a_type, (a_type, 32))
    return name, repeat * ins.exec_size * depth * (32 // bits)


def block_shapes(isa: str, grf_bytes: int) -> dict[int, BlockShape | None]:
    """Listing line index -> shape of every 2D block send in ``isa`` (None where the
    payload's shape dword could not be followed)."""
    tracker, shapes = PayloadTracker(grf_bytes), {}
    for i, line in enumerate(isa.splitlines()):
        ins = parse_line(line)
        if ins is None:
            continue
        if ins.kind in ("load2d", "prefetch", "store2d"):
            shapes[i] = tracker.block_shape(ins)
        tracker.observe(ins)
    return shapes
