"""The K loop of a GEMM in its SASS (``cuobjdump -sass`` or ``nvdisasm`` text): the loop
holding the first HGMMA (from the label its back branch jumps to, to that branch), its
instructions by opcode, and the instructions one trip of an interior tile runs (the
shortest path through the loop's blocks, inner loops' back edges left out: the edge-tile
copies of ``codegen/nvptx/wgmma_gemm`` are branches an interior trip does not take;
a loop without branches, Triton's, runs all of it).  vs_cuda.py and peer_gemm_triton.py
print these counts side by side for the same tile.

    python benchmarks/sass_loop.py kernel.sass    # one line of counts

    >>> sass = '''
    ... .L_x_1:
    ...         /*0100*/                   HGMMA.64x256x16.F32 R24, gdesc[UR8].tnspB, R24 ;
    ...         /*0110*/              @P0 BRA `(.L_x_2) ;
    ...         /*0120*/                   LDGSTS.E.BYPASS.128.ZFILL [R1], desc[UR4][R2.64], P1 ;
    ... .L_x_2:
    ...         /*0130*/                   LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64] ;
    ...         /*0140*/              @!P1 BRA `(.L_x_1) ;
    ... '''
    >>> counts(sass)["loop"], counts(sass)["trip"], counts(sass)["HGMMA"]
    (5, 4, 1)
"""
from __future__ import annotations

import collections
import re
import sys

_INSTR = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_BRANCH = re.compile(r"\bBRA\b.*?(\.L_x_\d+|0x[0-9a-f]+)")


def _parse(sass: str) -> tuple[list[str], dict[str, int]]:
    instrs, labels = [], {}
    for line in sass.splitlines():
        label = _LABEL.match(line)
        if label:
            labels[label.group(1)] = len(instrs)
            continue
        m = _INSTR.match(line)
        if m:
            labels[hex(int(m.group(1), 16))] = len(instrs)   # cuobjdump branches to addresses
            instrs.append(m.group(2))
    return instrs, labels


def hot_loop(sass: str) -> tuple[list[str], dict[str, int], int]:
    """(instructions, labels, start index) of the loop holding the first HGMMA; ([], {}, 0)
    where there is none."""
    instrs, labels = _parse(sass)
    first = next((i for i, t in enumerate(instrs) if "HGMMA" in t), None)
    if first is None:
        return [], {}, 0
    for i in range(first, len(instrs)):
        m = _BRANCH.search(instrs[i])
        if m and labels.get(m.group(1), 1 << 30) <= first:
            start = labels[m.group(1)]
            return instrs[start:i + 1], {k: v - start for k, v in labels.items() if start <= v <= i}, start
    return [], {}, 0


def _opcode(text: str) -> str:
    words = text.split()
    word = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
    return word.split(".")[0]


def trip_path(loop: list[str], labels: dict[str, int]) -> list[str]:
    """The instructions on the shortest path from the loop's head to its back branch
    (each block's fall-through and branch edges, forward only)."""
    n = len(loop)
    best, came = [1 << 30] * (n + 1), [-1] * (n + 1)
    best[0] = 0

    def reach(at, length, source):
        if length < best[at]:
            best[at], came[at] = length, source
    for i, text in enumerate(loop):           # forward edges only: a DAG in address order
        if best[i] >= 1 << 30:
            continue
        here = best[i] + 1
        if i == n - 1:
            reach(n, here, i)
            continue
        m = _BRANCH.search(text)
        conditional = text.startswith("@") or (m and re.search(r"BRA\s+!?U?P\d", text))
        if m and labels.get(m.group(1), -1) > i:
            reach(labels[m.group(1)], here, i)
        if not m or conditional:
            reach(i + 1, here, i)
    path, at = [], came[n]
    while at >= 0:
        path.append(loop[at])
        at = came[at]
    return path[::-1]


def counts(sass: str) -> dict:
    """``loop``: instructions of the K loop; ``trip``: those an interior trip runs; the
    kernel's ``total``; and the loop's count of each opcode (HGMMA, LDGSTS, SEL, ...)."""
    loop, labels, _ = hot_loop(sass)
    out: dict = collections.Counter(_opcode(t) for t in loop)
    trip = trip_path(loop, labels) if loop else []
    out.update(loop=len(loop), trip=len(trip), trip_LDGSTS=sum(_opcode(t) == "LDGSTS" for t in trip),
               total=len(_parse(sass)[0]))
    return out


def line(sass: str) -> str:
    """The counts as one line: kernel, loop, interior trip, and the loop's HGMMA, LDGSTS,
    UTMALDG (TMA), SEL, ISETP, IMAD, IADD3, BAR and MEMBAR."""
    c = counts(sass)
    return (f"SASS {c['total']} instructions, K loop {c['loop']}, interior trip {c['trip']} ({c['trip_LDGSTS']} LDGSTS; loop: HGMMA "
            f"{c['HGMMA']}, LDGSTS {c['LDGSTS']}, UTMALDG {c['UTMALDG']}, SEL {c['SEL']}, ISETP {c['ISETP']}, "
            f"IMAD {c['IMAD']}, IADD3 {c['IADD3']}, BAR {c['BAR']}, MEMBAR {c['MEMBAR']})")


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(line(f.read()))
