"""The order of a loop latch's instructions as IGC's scheduler best takes them (pvc).

IGC schedules a loop body from the order it is given, and on the A^T.B GEMM (ocloc
26.27) that order decides how many synchronisations and dummy moves the hot loop keeps:

* each prefetch through an address payload goes through a copy of the payload
  (:func:`.builtins.payload.prefetch_moved`); when the copies of consecutive prefetches come
  before their messages, IGC gives them distinct registers, and no copy is rewritten
  while a prefetch still reads it (a rewrite costs three dummy ``mov``s and a ``sync``);
* the DPAS calls go after the body's loads and the moves that build their operands:
  the loads are issued first and the multiplications wait once instead of in turns.

Only loops that :func:`.emit.transposed_payloads.orders_latch` chooses (pvc, A^T.B-like: the
two orders cost 1-3 instructions on small tiles and on A.B / A.Bt loops).  Both are
reorderings inside one basic block, the latch (the block that branches back to
a loop header), of calls without memory effects that IGC can see (DPAS) or of prefetch
hints; nothing moves across another block.  A DPAS stays in place when something other
than a later DPAS or the loop's phis uses its result.  On the 256x256 A^T.B GEMM of
benchmarks/gemm_isa.py this is 127 -> 120 hot-loop instructions (123 with the payload
copies alone; docs/decisions/021-code-shaped-for-igc.md).
"""
from __future__ import annotations

from llvmlite import ir

#: what names the calls this module moves (IGC's DPAS builtins, the payload prefetches
#: and the payload builtins that feed them; on the CPU device the copy is the emulated
#: one, builtins/payload.py, so the CPU runs the same order)
_DPAS = "_matrix_mad_k"
_PREFETCH = "__builtin_IB_subgroup_block_read_ap_prefetch_"
_COPIES = ("__builtin_IB_subgroup_copyBlock2DAddressPayload", "__xetile_emulated_copyBlock2DAddressPayload")
_PAYLOAD_FEED = _COPIES + ("__builtin_IB_subgroup_addBlock2DAddressPayload",)
_LOOP_HEADERS = ("for.header", "while.before")


def order_latches(fn: ir.Function) -> None:
    """Reorder the loop latch blocks of ``fn`` that prefetch through payload copies (the
    loops :func:`.emit.transposed_payloads.orders_latch` chose; module doc)."""
    for block in fn.blocks:
        if _is_latch(block) and any(_callee(i).startswith(_COPIES) for i in block.instructions):
            body = block.instructions[:-1]
            body = _prefetches_after_their_copies(body)
            block.instructions[:-1] = _dpas_last(body)


def _is_latch(block: ir.Block) -> bool:
    """Whether ``block`` ends by branching back to a loop header."""
    term = block.terminator
    return (isinstance(term, ir.Branch) and not isinstance(term, ir.ConditionalBranch)
            and term.operands[0].name.startswith(_LOOP_HEADERS))


def _callee(inst) -> str:
    return inst.callee.name if isinstance(inst, ir.CallInstr) and isinstance(inst.callee, ir.Function) else ""


def _prefetches_after_their_copies(body: list) -> list:
    """``body`` with each payload prefetch moved down past the payload copies, offset
    adds and integer arithmetic that follow it (the run of its neighbours' feeds)."""
    out, pending = [], []
    for inst in body:
        name = _callee(inst)
        if name.startswith(_PREFETCH):
            pending.append(inst)
        elif pending and (name.startswith(_PAYLOAD_FEED) or _is_integer_arithmetic(inst)):
            out.append(inst)
        else:
            out += pending
            pending = []
            out.append(inst)
    return out + pending


def _is_integer_arithmetic(inst) -> bool:
    """A side-effect-free integer instruction (an offset computed between two prefetches)."""
    return isinstance(inst, ir.Instruction) and not isinstance(inst, ir.CallInstr) and inst.opname in (
        "add", "sub", "mul", "shl", "lshr", "ashr", "and", "or", "trunc", "zext", "sext")


def _dpas_last(body: list) -> list:
    """``body`` with its DPAS calls at the end, in their order, except those whose result
    something other than a moving DPAS uses in the block."""
    users: dict[int, list] = {}
    for inst in body:
        for operand in inst.operands:
            users.setdefault(id(operand), []).append(inst)
    moving: set[int] = set()
    for inst in reversed(body):
        if _DPAS in _callee(inst) and all(id(u) in moving for u in users.get(id(inst), [])):
            moving.add(id(inst))
    return [i for i in body if id(i) not in moving] + [i for i in body if id(i) in moving]
