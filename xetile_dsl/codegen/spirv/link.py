"""Link SPIR-V modules: a kernel module and the emulated builtins' modules it imports.

For the CPU device the emulated builtins' bodies are most of a module, and LLVM's SPIR-V
backend spends most of a compile on them; :mod:`.translate` emits each body once per
process as a module of its own (its function exported) and the kernel with those
functions imported, and this module joins them.  The kernel module's ids are kept as
they are; each builtin module's ids are renumbered after them:

* capabilities, extensions and extended instruction sets are merged (by value / name);
* types and constants are merged by value (SPIR-V forbids two ids for one non-aggregate
  type, and merging the rest keeps the module small);
* a variable decorated ``BuiltIn`` becomes the kernel's variable of that BuiltIn (or is
  added, and listed in the entry points' interfaces);
* each import of the kernel is resolved to the exported definition: the declaration and
  both linkage decorations go, calls go to the definition, and where a pointer parameter
  has another pointee type in the definition (the backend types an opaque pointer from
  its uses) the argument is bitcast at the call.  ``Linkage`` goes when nothing links.

Only opcodes in :data:`_FORMATS` (what the backend emits for our builtins) are renumbered;
any other opcode, or anything else this linker does not handle, raises :class:`LinkError`,
and the caller emits the whole module instead: never a silently wrong module.
"""
from __future__ import annotations

import array
from collections.abc import Sequence

import numpy as np

from ...errors import SpirvEmitError

MAGIC = 0x07230203
HEADER_WORDS = 5

# opcodes this module treats specially (SPIR-V spec, section 3.49 "Instructions")
OP_SOURCE_CONTINUED, OP_SOURCE, OP_SOURCE_EXTENSION, OP_NAME, OP_MEMBER_NAME, OP_STRING = 2, 3, 4, 5, 6, 7
OP_EXTENSION, OP_EXT_INST_IMPORT, OP_MEMORY_MODEL, OP_ENTRY_POINT = 10, 11, 14, 15
OP_EXECUTION_MODE, OP_CAPABILITY, OP_EXECUTION_MODE_ID, OP_MODULE_PROCESSED = 16, 17, 331, 330
OP_TYPE_POINTER, OP_TYPE_FUNCTION, OP_TYPE_FORWARD_POINTER = 32, 33, 39
_FIRST_TYPE, _LAST_TYPE = 19, 39           # OpTypeVoid .. OpTypeForwardPointer: no result type
OP_FUNCTION, OP_FUNCTION_PARAMETER, OP_FUNCTION_END, OP_FUNCTION_CALL = 54, 55, 56, 57
OP_VARIABLE, OP_DECORATE, OP_LABEL, OP_BITCAST = 59, 71, 248, 124
DECORATION_BUILTIN, DECORATION_LINKAGE = 11, 41
LINKAGE_EXPORT, LINKAGE_IMPORT = 0, 1
CAPABILITY_LINKAGE = 5

_DEBUG = {OP_SOURCE_CONTINUED, OP_SOURCE, OP_SOURCE_EXTENSION, OP_NAME, OP_MEMBER_NAME, OP_STRING,
          OP_MODULE_PROCESSED}
_ANNOTATIONS = {OP_DECORATE, 72, 73, 74, 75, 332, 5632}
_PREAMBLE = {OP_CAPABILITY, OP_EXTENSION, OP_EXT_INST_IMPORT, OP_MEMORY_MODEL, OP_ENTRY_POINT,
             OP_EXECUTION_MODE, OP_EXECUTION_MODE_ID} | _DEBUG | _ANNOTATIONS

#: Operand layout of each opcode the builtin modules may hold, from the SPIR-V grammar:
#: ``T`` result type id, ``R`` result id, ``i`` an id, ``L`` a literal word, ``S`` a
#: literal string, ``M`` memory-access operands; a final ``*`` repeats the letter before
#: it to the end.  Ops whose optional operands can hold ids (memory operands with
#: MakePointerAvailable/Visible, OpSwitch's width-dependent literals) are checked or left
#: out.
_FORMATS: dict[int, str] = {
    **{op: "TRi*" for op in (
        # conversions, arithmetic, comparisons, bit operations
        109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 124, 126, 127,
        128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 148, 149, 150, 151, 152,
        154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172, 173,
        174, 175, 176, 177, 178, 179, 180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191,
        194, 195, 196, 197, 198, 199, 200, 201, 202, 203, 204, 205,
        # pointers, composites, calls, phis
        65, 66, 67, 70, 77, 78, 80, 83, 57, 245,
        # atomics (pointer, scope, semantics, values: all ids)
        227, 229, 230, 231, 232, 233, 234, 235, 236, 237, 238, 239, 240, 241, 242, 5614, 5615, 6035,
        # subgroup operations: broadcast, any/all, shuffles, block reads
        261, 262, 263, 5571, 5572, 5573, 5574, 5575)},
    **{op: "TRiLi" for op in range(264, 272)},          # OpGroupIAdd..OpGroupSMax: scope, operation, value
    1: "TR",                     # OpUndef
    12: "TRiLi*",                # OpExtInst: set, instruction number, operands
    79: "TRiiL*",                # OpVectorShuffle
    81: "TRiL*",                 # OpCompositeExtract
    82: "TRiiL*",                # OpCompositeInsert
    123: "TRiL",                 # OpGenericCastToPtrExplicit
    61: "TRiM",                  # OpLoad
    62: "iiM",                   # OpStore
    63: "iiM",                   # OpCopyMemory
    64: "iiiM",                  # OpCopyMemorySized
    228: "iiii",                 # OpAtomicStore
    224: "iii",                  # OpControlBarrier
    225: "ii",                   # OpMemoryBarrier
    5576: "ii*",                 # OpSubgroupBlockWriteINTEL
    256: "iL", 257: "iL",        # OpLifetimeStart/Stop
    OP_VARIABLE: "TRLi*",
    OP_FUNCTION: "TRLi",
    OP_FUNCTION_PARAMETER: "TR",
    OP_FUNCTION_END: "",
    OP_LABEL: "R",
    246: "iiL*",                 # OpLoopMerge
    247: "iL",                   # OpSelectionMerge
    249: "i",                    # OpBranch
    250: "iiiL*",                # OpBranchConditional
    253: "", 255: "",            # OpReturn, OpUnreachable
    254: "i",                    # OpReturnValue
    # types and constants
    19: "R", 20: "R", 21: "RLL", 22: "RL*", 23: "RiL", 28: "Rii", 29: "Ri", 30: "Ri*", 31: "RS",
    OP_TYPE_POINTER: "RLi", OP_TYPE_FUNCTION: "Ri*", 34: "R",
    41: "TR", 42: "TR", 43: "TRL*", 44: "TRi*", 46: "TR",
    # preamble, debug and annotations
    OP_CAPABILITY: "L", OP_EXTENSION: "S", OP_ENTRY_POINT: "LiSi*", OP_EXECUTION_MODE: "iLL*", OP_EXT_INST_IMPORT: "RS", OP_MEMORY_MODEL: "LL",
    OP_SOURCE: "LL*", OP_SOURCE_EXTENSION: "S", OP_NAME: "iS", OP_MEMBER_NAME: "iLS", OP_STRING: "RS",
    OP_MODULE_PROCESSED: "S", OP_DECORATE: "iL*", 72: "iLL*", 332: "iLi*",
}
#: memory-access bits followed by an id operand (MakePointerAvailable, MakePointerVisible)
_MEMORY_ID_BITS = 0x8 | 0x10


class LinkError(SpirvEmitError):
    """The modules cannot be linked here (the caller emits the whole module instead)."""


Instruction = tuple  # (opcode, operand words...): the word count is implied


def parse(binary: bytes) -> tuple[list[int], list[Instruction]]:
    """The header words and instructions (opcode first, then operand words) of a module."""
    words = array.array("I", binary)
    if len(words) < HEADER_WORDS or words[0] != MAGIC:
        raise LinkError("not a SPIR-V module in this byte order")
    out, i, end = [], HEADER_WORDS, len(words)
    while i < end:
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        if count == 0 or i + count > end:
            raise LinkError(f"malformed instruction at word {i}")
        out.append((opcode, *words[i + 1:i + count]))
        i += count
    return list(words[:HEADER_WORDS]), out


def serialize(header: Sequence[int], instructions: Sequence[Instruction]) -> bytes:
    words = array.array("I", header)
    for inst in instructions:
        words.append((len(inst) << 16) | inst[0])
        words.extend(inst[1:])
    return words.tobytes()


def id_positions(inst: Instruction) -> tuple[int | None, int | None, list[int]]:
    """(index of the result type, of the result id, of every other id operand) in
    ``inst`` (index 0 is the opcode); LinkError for an opcode not in :data:`_FORMATS`."""
    fmt = _FORMATS.get(inst[0])
    if fmt is None:
        raise LinkError(f"SPIR-V opcode {inst[0]} is not in the linker's table")
    letters, repeats = fmt.rstrip("*"), fmt.endswith("*")
    type_at = result_at = None
    ids: list[int] = []
    pos, k, n = 1, 0, len(inst)
    while pos < n:
        if k < len(letters):
            letter, k = letters[k], k + 1
        elif repeats:
            letter = letters[-1]
        else:
            raise LinkError(f"SPIR-V opcode {inst[0]} has more operands than the linker's table allows")
        if letter == "T":
            type_at = pos
        elif letter == "R":
            result_at = pos
        elif letter == "i":
            ids.append(pos)
        elif letter == "S":
            while pos < n and (inst[pos] >> 24) != 0:      # a string ends with a word holding a 0 byte
                pos += 1
        elif letter == "M":
            if inst[pos] & _MEMORY_ID_BITS:
                raise LinkError(f"SPIR-V opcode {inst[0]}: memory operands with ids")
            pos = n - 1                                  # the rest are literals
        pos += 1
    return type_at, result_at, ids


def string_at(inst: Instruction, pos: int) -> tuple[str, int]:
    """The literal string starting at ``inst[pos]`` and the index after it."""
    data = array.array("I", inst[pos:]).tobytes()
    end = data.index(b"\0")
    return data[:end].decode(), pos + end // 4 + 1


class Relocatable:
    """A builtin module prepared once for any number of links: its preamble and globals
    as instructions, its functions as one word array with the index of every id in it
    (renumbered with one numpy gather per link)."""

    def __init__(self, binary: bytes):
        self.header, instructions = parse(binary)
        first = next((k for k, inst in enumerate(instructions) if inst[0] == OP_FUNCTION), len(instructions))
        self.globals = instructions[:first]
        #: id_positions of each global instruction (None for debug ones); every opcode
        #: must be known, or LinkError now
        self.layouts = [None if inst[0] in _DEBUG else id_positions(inst) for inst in self.globals]
        results, id_at, starts, offset, has_body = [], [], [], 0, False
        for inst in instructions[first:]:
            if inst[0] == OP_FUNCTION:
                starts.append(offset)
                has_body = False
            elif inst[0] == OP_LABEL:
                has_body = True
            elif inst[0] == OP_FUNCTION_END and not has_body:
                raise LinkError("a builtin module declares a function")
            type_at, result_at, ids = id_positions(inst)
            if result_at is not None:
                results.append(inst[result_at])
            id_at.extend(offset + p for p in ids)
            id_at.extend(offset + p for p in (type_at, result_at) if p is not None)
            offset += len(inst)
        self.words = np.frombuffer(serialize([], instructions[first:]), dtype=np.uint32)
        self.id_at = np.array(sorted(id_at), dtype=np.int64)
        self.results = np.array(results, dtype=np.uint32)
        self.function_starts = starts


def link(kernel: bytes, builtins: Sequence[Relocatable]) -> bytes:
    """``kernel`` with its imports resolved from ``builtins`` (each exporting functions).
    Deterministic: the result depends only on the arguments and their order."""
    linker = _Linker(kernel)
    for module in builtins:
        linker.add(module)
    return linker.finish()


class _Linker:
    """The kernel module's sections, growing as builtin modules are added."""

    def __init__(self, kernel: bytes):
        self.header, instructions, self.kernel_functions = _parse_until_functions(kernel)
        self.next_id = self.header[3]
        self.sections: dict[str, list[Instruction]] = {name: [] for name in (
            "capability", "extension", "import", "memory", "entry", "mode", "debug", "annotation", "global")}
        for inst in instructions:
            self.sections[_section(inst[0])].append(inst)
        self.by_value = {}          # (opcode, operands but the result id) -> id of a type/constant
        for inst in self.sections["global"]:
            if inst[0] != OP_VARIABLE:
                result_at = 1 if _FIRST_TYPE <= inst[0] <= _LAST_TYPE else 2    # types: no result type
                self.by_value.setdefault(_value_key(inst, result_at), inst[result_at])
        self.variable_types = {inst[2]: inst[1] for inst in self.sections["global"] if inst[0] == OP_VARIABLE}
        self.sets = {string_at(inst, 2)[0]: inst[1] for inst in self.sections["import"]}
        self.builtin_vars = {inst[3]: inst[1] for inst in self.sections["annotation"]
                             if inst[0] == OP_DECORATE and inst[2] == DECORATION_BUILTIN}
        self.annotations = set(self.sections["annotation"])
        self.exports: dict[str, int] = {}    # linkage name -> id of the definition (renumbered)
        self.definitions: dict[int, int] = {}  # id of an added function -> id of its OpTypeFunction
        self.added_functions: list[np.ndarray] = []
        self.added_names: list[Instruction] = []
        self.interface: list[int] = []

    def fresh(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    # --- one builtin module ---------------------------------------------------------
    def add(self, module: Relocatable) -> None:
        """Merge ``module``'s preamble and globals, renumber and keep its functions."""
        if module.header[1] != self.header[1]:
            raise LinkError("modules of different SPIR-V versions")
        table = np.zeros(module.header[3], dtype=np.uint32)   # old id -> new id (0: unknown)
        table[module.results] = np.arange(self.next_id, self.next_id + len(module.results), dtype=np.uint32)
        self.next_id += len(module.results)
        ids = _Table(table)
        builtin_of = {inst[1]: inst[3] for inst in module.globals
                      if inst[0] == OP_DECORATE and inst[2] == DECORATION_BUILTIN}
        deferred = []
        for inst, layout in zip(module.globals, module.layouts):
            op = inst[0]
            if op in (OP_CAPABILITY, OP_EXTENSION):
                self._merge_unique(inst, "capability" if op == OP_CAPABILITY else "extension")
            elif op == OP_EXT_INST_IMPORT:
                self._merge_set(inst, ids)
            elif op == OP_MEMORY_MODEL:
                if self.sections["memory"] and inst != self.sections["memory"][0]:
                    raise LinkError("modules of different memory models")
            elif op in (OP_NAME, OP_DECORATE, 72, 332):
                deferred.append(inst)                         # after every id is known
            elif op in _DEBUG:
                continue
            elif op in _PREAMBLE:
                raise LinkError(f"a builtin module with SPIR-V opcode {op} in its preamble")
            else:
                self._merge_global(inst, layout, ids, builtin_of)
        for inst in deferred:
            self._merge_annotation(inst, ids)
        words = module.words.copy()
        old = words[module.id_at]
        new = table[old]
        if not new.all():
            raise LinkError(f"a builtin module uses id {int(old[new == 0][0])} that it never defines")
        words[module.id_at] = new
        for start in module.function_starts:                  # OpFunction: type, result, control, function type
            self.definitions[int(words[start + 2])] = int(words[start + 4])
        self.added_functions.append(words)

    def _merge_unique(self, inst: Instruction, section: str) -> None:
        if inst not in self.sections[section]:
            self.sections[section].append(inst)

    def _merge_set(self, inst: Instruction, ids) -> None:
        name = string_at(inst, 2)[0]
        if name not in self.sets:
            self.sets[name] = self.fresh()
            self.sections["import"].append((inst[0], self.sets[name], *inst[2:]))
        ids[inst[1]] = self.sets[name]

    def _merge_global(self, inst: Instruction, layout: tuple, ids, builtin_of: dict) -> None:
        """A type or constant (merged by value) or a module-scope variable."""
        if inst[0] == OP_TYPE_FORWARD_POINTER:
            raise LinkError("OpTypeForwardPointer in a builtin module")
        type_at, result_at, _ = layout
        mapped = _renumbered(inst, ids, layout)
        if inst[0] == OP_VARIABLE:
            builtin = builtin_of.get(inst[result_at])
            existing = self.builtin_vars.get(builtin) if builtin is not None else None
            if existing is not None:
                if self.variable_types.get(existing) != mapped[type_at]:
                    raise LinkError(f"BuiltIn {builtin} variables of different types")
                ids[inst[result_at]] = existing
                return
            new = ids[inst[result_at]] = self.fresh()
            self.variable_types[new] = mapped[type_at]
            if builtin is not None:
                self.builtin_vars[builtin] = new
            self.interface.append(new)
            self.sections["global"].append(_with(mapped, result_at, new))
            return
        key = _value_key(mapped, result_at)
        existing = self.by_value.get(key)
        if existing is None:
            existing = self.by_value[key] = self.fresh()
            self.sections["global"].append(_with(mapped, result_at, existing))
        ids[inst[result_at]] = existing

    def _merge_annotation(self, inst: Instruction, ids) -> None:
        """A name or decoration of a new id (merged ids keep the kernel's); an export's
        linkage decoration is dropped (recorded), a builtin module may import only
        BuiltIn variables."""
        target = ids.get(inst[1])
        if target is None:
            raise LinkError(f"a decoration or name of an unknown id {inst[1]}")
        if inst[0] == OP_DECORATE and inst[2] == DECORATION_LINKAGE:
            name, after = string_at(inst, 3)
            if inst[after] == LINKAGE_EXPORT:
                self.exports[name] = target
                return
            if target not in self.builtin_vars.values():
                raise LinkError(f"a builtin module imports {name!r}")
        if target < self.header[3]:                          # merged into a kernel id: keep the kernel's
            return
        mapped = (inst[0], target, *inst[2:]) if inst[0] != 332 else _renumbered(inst, ids, id_positions(inst))
        if inst[0] == OP_NAME:
            self.added_names.append(mapped)
        elif mapped not in self.annotations:
            self.annotations.add(mapped)
            self.sections["annotation"].append(mapped)

    # --- resolving the kernel's imports --------------------------------------------------
    def finish(self) -> bytes:
        """The linked module's words."""
        declared = self._resolve_imports()
        functions = self._kernel_functions(declared)
        if not any(i[0] == OP_DECORATE and i[2] == DECORATION_LINKAGE for i in self.sections["annotation"]):
            self.sections["capability"] = [i for i in self.sections["capability"] if i[1] != CAPABILITY_LINKAGE]
        entries = [(*inst, *(v for v in self.interface if v not in inst[_interface_start(inst):]))
                   for inst in self.sections["entry"]]
        s = self.sections
        processed = [i for i in s["debug"] if i[0] == OP_MODULE_PROCESSED]
        debug = [i for i in s["debug"] if i[0] != OP_MODULE_PROCESSED] + self.added_names + processed
        body = (s["capability"] + s["extension"] + s["import"] + s["memory"] + entries + s["mode"]
                + debug + s["annotation"] + s["global"])
        header = list(self.header)
        header[3] = self.next_id
        return (serialize(header, body) + functions.tobytes()
                + b"".join(words.tobytes() for words in self.added_functions))

    def _resolve_imports(self) -> dict[int, int]:
        """kernel's imported function id -> the definition's id, with the import's
        linkage decoration (and its names/decorations) removed."""
        declared: dict[int, int] = {}
        kept = []
        for inst in self.sections["annotation"]:
            if inst[0] == OP_DECORATE and inst[2] == DECORATION_LINKAGE:
                name, after = string_at(inst, 3)
                if inst[after] == LINKAGE_IMPORT and name in self.exports:
                    declared[inst[1]] = self.exports[name]
                    continue
            kept.append(inst)
        self.sections["annotation"] = kept
        return declared

    def _casts(self, declaration: Sequence[int], definition: int) -> list[int | None]:
        """The definition's type of each parameter whose type differs in the kernel's
        ``declaration`` (its OpFunction's operands), None where they agree; LinkError
        unless each such pair is two pointers of one storage class."""
        pointers = {i[1]: i[2] for i in self.sections["global"] if i[0] == OP_TYPE_POINTER}
        fn_types = {i[1]: i[2:] for i in self.sections["global"] if i[0] == OP_TYPE_FUNCTION}
        wanted, have = fn_types[self.definitions[definition]], fn_types[declaration[3]]
        if wanted[0] != have[0] or len(wanted) != len(have):
            raise LinkError(f"import {declaration[1]} and its definition return or take different types")
        row = []
        for got, want in zip(have[1:], wanted[1:]):
            if got != want and (got not in pointers or want not in pointers or pointers[got] != pointers[want]):
                raise LinkError(f"import {declaration[1]}: parameter types {got} and {want} cannot be bitcast")
            row.append(want if got != want else None)
        return row

    def _kernel_functions(self, declared: dict[int, int]) -> array.array:
        """The kernel's functions (words) without the resolved declarations; calls to those
        go to the definitions, bitcasting arguments where :meth:`_casts` says.  Only the
        instruction headers are read: the rest is copied a run of words at a time."""
        words, out = self.kernel_functions, array.array("I")
        casts: dict[int, list[int | None]] = {}
        dropped = set(declared)
        at, copied, skipping, end = 0, 0, False, len(words)
        while at < end:
            count, op = words[at] >> 16, words[at] & 0xFFFF
            if count == 0:
                raise LinkError("malformed instruction in the kernel module")
            if op == OP_FUNCTION and words[at + 2] in declared:
                out.extend(words[copied:at])
                casts[words[at + 2]] = self._casts(words[at + 1:at + 5], declared[words[at + 2]])
                skipping = True
            if skipping:
                if op == OP_FUNCTION_PARAMETER:
                    dropped.add(words[at + 2])
                skipping = op != OP_FUNCTION_END
                copied = at + count
            elif op == OP_FUNCTION_CALL and words[at + 3] in declared:
                out.extend(words[copied:at])
                args = list(words[at + 4:at + count])
                for k, want in enumerate(casts[words[at + 3]]):
                    if want is not None:
                        cast = self.fresh()
                        out.extend(((4 << 16) | OP_BITCAST, want, cast, args[k]))
                        args[k] = cast
                out.extend((words[at], words[at + 1], words[at + 2], declared[words[at + 3]], *args))
                copied = at + count
            at += count
        out.extend(words[copied:])
        self.sections["debug"] = [i for i in self.sections["debug"] if not (i[0] == OP_NAME and i[1] in dropped)]
        self.sections["annotation"] = [i for i in self.sections["annotation"] if i[1] not in dropped]
        return out


def _parse_until_functions(binary: bytes) -> tuple[list[int], list[Instruction], array.array]:
    """The header, the instructions before the first function, and the rest as words."""
    words = array.array("I", binary)
    if len(words) < HEADER_WORDS or words[0] != MAGIC:
        raise LinkError("not a SPIR-V module in this byte order")
    out, i, end = [], HEADER_WORDS, len(words)
    while i < end and (words[i] & 0xFFFF) != OP_FUNCTION:
        count = words[i] >> 16
        if count == 0 or i + count > end:
            raise LinkError(f"malformed instruction at word {i}")
        out.append((words[i] & 0xFFFF, *words[i + 1:i + count]))
        i += count
    return list(words[:HEADER_WORDS]), out, words[i:]


_SECTIONS = {OP_CAPABILITY: "capability", OP_EXTENSION: "extension", OP_EXT_INST_IMPORT: "import",
             OP_MEMORY_MODEL: "memory", OP_ENTRY_POINT: "entry", OP_EXECUTION_MODE: "mode",
             OP_EXECUTION_MODE_ID: "mode", **{op: "debug" for op in _DEBUG}, **{op: "annotation" for op in _ANNOTATIONS}}


def _section(opcode: int) -> str:
    """Which logical-layout section a kernel instruction before its functions belongs to."""
    return _SECTIONS.get(opcode, "global")


def _value_key(inst: Instruction, result_at: int) -> tuple:
    return inst[:result_at] + inst[result_at + 1:]


class _Table:
    """A builtin module's old id -> new id (a numpy array; 0 where not yet known), read
    and written like a dict by the per-instruction code."""

    def __init__(self, table: np.ndarray):
        self.table = table

    def __getitem__(self, old: int) -> int:
        new = int(self.table[old]) if old < len(self.table) else 0
        if not new:
            raise KeyError(old)
        return new

    def __setitem__(self, old: int, new: int) -> None:
        self.table[old] = new

    def get(self, old: int, default=None):
        try:
            return self[old]
        except KeyError:
            return default


def _renumbered(inst: Instruction, ids, layout: tuple) -> Instruction:
    """``inst`` with every id operand (and the result type) mapped through ``ids``;
    ``layout`` is its :func:`id_positions`."""
    type_at, _, positions = layout
    if type_at is not None:
        positions = [type_at, *positions]
    words = list(inst)
    for pos in positions:
        try:
            words[pos] = ids[inst[pos]]
        except KeyError:
            raise LinkError(f"SPIR-V opcode {inst[0]} uses id {inst[pos]} before its definition") from None
    return tuple(words)


def _with(inst: Instruction, pos: int, value: int) -> Instruction:
    return inst[:pos] + (value,) + inst[pos + 1:]


def _interface_start(inst: Instruction) -> int:
    """Index of the first interface id of an OpEntryPoint (after its name)."""
    return string_at(inst, 3)[1]
