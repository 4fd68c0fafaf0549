"""Flash-attention forward machine code: ops.attention against Triton-XPU (no GPU).

    python benchmarks/peer_attention_isa.py [--targets pvc bmg] [--out DIR] [--json FILE]

Both kernels go Python -> SPIR-V by their own compiler, then SPIR-V -> ISA with the same
ocloc (the project's tools/ocloc.py), and both hot loops are counted by the project's ISA
report (tools/isa_report.py: instructions per DPAS of the innermost DPAS loop, the short
path that skips forward branches, 2D block shapes, GRF mode, spill).

Triton: benchmarks/peer_attention_triton.py, run in a Triton-XPU venv
(``$TX/venv/bin/python``, TX default /tmp/tx; made by
/work/shared/tools/isa-compare/setup_triton.sh), one subprocess per configuration:
BLOCK_M 128 x BLOCK_N 64, 8 warps at D = 64 and 16 at D = 128, 3 stages, the large GRF
mode.  Its causal kernel has two DPAS loops, the key blocks wholly before the query
block (``off-band``, nearly every step of a long sequence) and the two masked
``diagonal`` blocks; both are shown.  Ours: ops.attention's kernel
(configs.attention_tiles, f16, the default positive scale, as ops.attention launches
it); its masked blocks run outside its loop.  Triton-XPU 3.3 compiles for "spir64"
from device properties alone, which BMG reports as PVC does (16-lane DPAS, 2D block
messages), so the bmg rows are the same SPIR-V built by ocloc for bmg.

The second table attributes each hot loop's instructions per DPAS to a role, by opcode,
types and operands (:func:`role`), on the path the report calls the short path.

Without the Triton venv the script says so in one line and exits 0.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

import xetile_dsl as xd
from xetile_dsl.ops import configs
from xetile_dsl.ops.attention import attention_kernel, attention_vnni_kernel
from xetile_dsl.ops.matmul import XT_DTYPES
from xetile_dsl.targets.target import get_target
from xetile_dsl.tools import isa as iga
from xetile_dsl.tools import isa_report, ocloc

sys.path.insert(0, os.path.dirname(__file__))
from peer_triton import run_peer, triton_python  # noqa: E402

TRITON_SCRIPT = Path(__file__).with_name("peer_attention_triton.py")
OURS_SIG = {"q": "f16[:,:]", "k": "f16[:,:]", "v": "f16[:,:]", "o": "f16[:,:]", "lse": "f32[:,:]", "N": "i32",
            "NP": "i32", "qk_scale": "f32", "with_lse": "i32"}
HEAD_DIMS = (64, 128)

#: instruction roles of the attribution table, in print order
ROLES = ("dpas", "2D block sends", "other sends", "sync", "payload guards", "address/payload",
         "compare/branch", "max/select", "exp2", "scale/subtract", "row sums", "acc rescale",
         "cross-lane reductions", "conversions", "16-bit layout moves", "other moves", "int SIMD", "other")
ROLE_HELP = {
    "payload guards": "`mov (1) null` reads IGC puts before reusing a send payload register",
    "address/payload": "scalar integer ops, and writes of at most 8 dwords into a register whose next use is "
                       "a send payload (block offsets, payload copies)",
    "compare/branch": "cmp and branches (loop test, lazy-rescale test, causal mask compares)",
    "max/select": "SIMD16 float sel/max/min (element-wise row maxima, mask selects)",
    "exp2": "math.exp (2^x on Xe)",
    "scale/subtract": "SIMD16 mad, and mul/add with a broadcast or immediate operand (s * scale - m)",
    "row sums": "other SIMD16 float adds (element-wise row sums, statistics)",
    "acc rescale": "SIMD16 in-place float multiplies (the O accumulator by alpha)",
    "cross-lane reductions": "float ALU narrower than 16 lanes, 32-bit moves narrower than 16 lanes or with a "
                             "region narrower than the execution size, and moves of float constants (the "
                             "identity of a reduction tree across lanes)",
    "conversions": "moves between element types (f32 -> f16 of P)",
    "16-bit layout moves": "same-type moves of 16-bit elements (VNNI interleave, word de-interleave of an "
                           "operand)",
    "other moves": "remaining same-type moves (register copies)",
    "int SIMD": "integer SIMD ops (masks, indices)",
}
_BRANCHES = ("jmpi", "goto", "join", "while", "brc", "if", "else", "endif", "brd", "cmp", "cmpn")
_FLOAT_TYPES = ("f", "hf", "bf", "df")
_INT_TYPES = ("d", "ud", "w", "uw", "b", "ub", "q", "uq")
_REGION = re.compile(r"<(\d+);(\d+),(\d+)>")
_IMMEDIATE = re.compile(r"^-?(?:[0-9.]+(?:e[-+]?\d+)?|inf|nan|0x[0-9A-Fa-f]+):\w+$")


def operand_type(operand: str) -> str:
    """The IGA type suffix of an operand (``r12.0<1;1,0>:f`` -> ``f``), "" if none."""
    return operand.rsplit(":", 1)[-1] if ":" in operand else ""


def operand_register(operand: str) -> int | None:
    """The GRF number of a register operand (``-r14.2<0;1,0>:f`` -> 14), None for others."""
    m = re.match(r"^[-~]?(?:\([^)]*\))?r(\d+)\b", operand)
    return int(m.group(1)) if m else None


def _payload_writes(ins_list: list[iga.Instruction]) -> set[int]:
    """Indices of the small writes (at most 8 lanes, or a scalar) whose register's next
    use, going round the loop, is as the address payload of a send."""
    found = set()
    n = len(ins_list)
    for i, ins in enumerate(ins_list):
        reg = operand_register(ins.dst)
        if reg is None or ins.kind != "other" or ins.exec_size > 8:
            continue
        for step in range(1, n + 1):
            nxt = ins_list[(i + step) % n]
            if nxt.opcode.startswith("send") and len(nxt.operands) > 1 and operand_register(nxt.operands[1]) == reg:
                found.add(i)
                break
            if nxt.opcode.startswith("send") or nxt.kind == "dpas":
                if operand_register(nxt.dst) == reg:
                    break  # overwritten by a response: not a payload
                continue
            if nxt.dst.startswith("null"):
                continue  # the guard reads
            if operand_register(nxt.dst) == reg and nxt.exec_size <= 8:
                continue  # more of the payload being built
            if any(operand_register(src) == reg for src in nxt.operands):
                break
    return found


def _narrow_region(operand: str, exec_size: int) -> bool:
    """True when a source region's width is below the execution size (``<16;8,1>`` of a
    SIMD16 move: rows of a register gathered, as a reduction tree across lanes does)."""
    m = _REGION.search(operand)
    return bool(m) and int(m.group(2)) not in (1, exec_size) and int(m.group(2)) < exec_size


def _float_role(ins: iga.Instruction, op: str) -> str:
    """The role of a float ALU instruction (not a move)."""
    if ins.exec_size < 16:
        return "cross-lane reductions"
    if op in ("sel", "max", "min", "csel"):
        return "max/select"
    if ins.opcode == "math.exp":
        return "exp2"
    sources = ins.operands[1:]
    dst_reg = operand_register(ins.dst)
    if op == "mul" and dst_reg is not None and dst_reg in [operand_register(s) for s in sources]:
        return "acc rescale"
    if op == "mad" or any("<0;1,0>" in s or _IMMEDIATE.match(s.lstrip("-")) for s in sources):
        return "scale/subtract"
    if op == "add":
        return "row sums"
    return "other"


def _move_role(ins: iga.Instruction) -> str:
    """The role of a ``mov`` (not to a payload)."""
    dst_type = operand_type(ins.dst)
    src = ins.operands[1] if len(ins.operands) > 1 else ""
    src_type = operand_type(src)
    if src_type and src_type != dst_type and not {src_type, dst_type} <= set(_INT_TYPES):
        return "conversions"
    if _IMMEDIATE.match(src.lstrip("-")) and dst_type in _FLOAT_TYPES:
        return "cross-lane reductions"
    if iga.TYPE_BYTES.get(dst_type) == 2:
        return "16-bit layout moves"
    if ins.exec_size < 16 or _narrow_region(src, ins.exec_size):
        return "cross-lane reductions"
    return "other moves"


def role(ins: iga.Instruction, payload: bool) -> str:
    """The role (one of ROLES) of one loop instruction; ``payload`` when it builds a send's
    address payload (:func:`_payload_writes`)."""
    if ins.kind == "dpas":
        return "dpas"
    if ins.kind in ("load2d", "prefetch", "store2d"):
        return "2D block sends"
    if ins.kind == "sync":
        return "sync"
    if ins.kind != "other":
        return "other sends"
    op = ins.opcode.split(".")[0]
    if op in _BRANCHES:
        return "compare/branch"
    if ins.dst.startswith("null"):
        return "payload guards"
    dst_type = operand_type(ins.dst)
    if payload or (ins.exec_size == 1 and dst_type in _INT_TYPES):
        return "address/payload"
    if op == "mov":
        return _move_role(ins)
    if dst_type in _FLOAT_TYPES:
        return _float_role(ins, op)
    return "int SIMD" if ins.exec_size > 1 else "other"


def loop_roles(loop_text: str) -> tuple[Counter, Counter]:
    """(roles of every instruction, roles of the short path) of one loop's listing."""
    lines = loop_text.splitlines()
    skipped = iga.skipped_lines(lines)
    parsed = [(i, ins) for i, line in enumerate(lines) if (ins := iga.parse_line(line)) is not None]
    payload = _payload_writes([ins for _, ins in parsed])
    every, short = Counter(), Counter()
    for k, (i, ins) in enumerate(parsed):
        r = role(ins, k in payload)
        every[r] += 1
        if i not in skipped:
            short[r] += 1
    return every, short


# --- the two compilers -------------------------------------------------------------------

def triton_spirv(out: Path, d: int, causal: bool) -> tuple[bytes, dict]:
    """(SPIR-V, meta) of Triton's kernel for (d, causal), from the Triton venv."""
    return run_peer(TRITON_SCRIPT, out, f"d{d}-{'causal' if causal else 'full'}")


def ours_kernel(target: str, d: int, causal: bool):
    """The kernel ops.attention launches on ``target`` at head dim ``d`` (its V-as-operand-B
    form where the target table asks for it, configs.attention_vnni_tiles), and its tiles."""
    vnni = configs.attention_vnni_tiles(target, d)
    kernel, (bm, bn) = (attention_vnni_kernel, vnni) if vnni else (attention_kernel, configs.attention_tiles(target, d))
    consts = {"CAUSAL": causal, "OUT": XT_DTYPES["float16"], "D": d, "BM": bm, "BN": bn, "SCALED": False}
    return xd.compile(kernel, OURS_SIG, consts, target=target), (bm, bn)


def dpas_loops(isa_text: str, report) -> list[tuple[isa_report.LoopReport, str]]:
    """The report's loops holding DPAS, in program order, with their listing text."""
    texts = {lp.start + 1: lp.text for lp in iga.report_loops(isa_text)}
    return [(lp, texts[lp.line]) for lp in sorted(report.loops, key=lambda lp: lp.line) if lp.dpas]


def row(compiler: str, tiles: str, loop_name: str, report, lp: isa_report.LoopReport, text: str) -> dict:
    """One table row: the report's numbers for loop ``lp`` and its role counts."""
    every, short = loop_roles(text)
    sends = Counter()
    for shape, n in lp.load2d_shapes.items():
        sends["transposed" if "transpose" in shape else "vnni" if "vnni" in shape else "plain"] += n
    return {"compiler": compiler, "tiles": tiles, "loop": loop_name, "grf": report.grf_mode,
            "spill": report.spill_bytes, "instructions": lp.instructions, "dpas": lp.dpas,
            "per_dpas": lp.instructions_per_dpas, "short_per_dpas": lp.short_path_instructions_per_dpas,
            "skippable": lp.skippable, "load2d": lp.counts.get("load2d", 0), "load2d_kinds": dict(sends),
            "load2d_shapes": lp.load2d_shapes, "prefetch": lp.counts.get("prefetch", 0),
            "other_sends": sum(lp.counts.get(k, 0) for k in ("gather", "scatter", "block1d", "slm", "scratch",
                                                               "send_other", "store2d")),
            "sync": lp.counts.get("sync", 0), "roles": dict(every), "short_roles": dict(short)}


def triton_rows(out: Path, target: str, d: int, causal: bool) -> list[dict]:
    spirv, meta = triton_spirv(out, d, causal)
    gpu = get_target(target)
    zebin = ocloc.compile_spirv(spirv, gpu.ocloc_device, meta["build_options"])
    report = isa_report.zebin_report(zebin, meta["kernel"], gpu)
    text = zebin.isa_text(meta["kernel"])
    _save(out, f"triton-{target}-d{d}-{'causal' if causal else 'full'}", text)
    loops = dpas_loops(text, report)
    names = ["off-band", "diagonal"] if causal and len(loops) == 2 else ["keys"] * len(loops)
    tiles = f"128x64 w{meta['num_warps']} ({meta['warps_per_cta'][0]}x{meta['warps_per_cta'][1]})"
    return [row("Triton-XPU", tiles, name, report, lp, t) for name, (lp, t) in zip(names, loops)]


def ours_rows(out: Path, target: str, d: int, causal: bool) -> list[dict]:
    kernel, (bm, bn) = ours_kernel(target, d, causal)
    report = kernel.report()
    text = kernel.asm["isa"]
    _save(out, f"ours-{target}-d{d}-{'causal' if causal else 'full'}", text)
    hot = report.hot
    loop = next(t for lp, t in dpas_loops(text, report) if lp is hot)
    return [row("xetile_dsl", f"{bm}x{bn} (BMxBN, 1 subgroup)", "keys", report, hot, loop)]


def _save(out: Path, name: str, isa_text: str) -> None:
    (out / "isa").mkdir(parents=True, exist_ok=True)
    (out / "isa" / f"{name}.isa").write_text(isa_text)


# --- tables --------------------------------------------------------------------------------

def _fmt(x) -> str:
    return f"{x:.2f}" if isinstance(x, float) else str(x)


def counts_table(rows: list[dict]) -> str:
    head = ("| target | D | causal | compiler | tiles | loop | GRF | spill B | instr | DPAS | i/DPAS | "
            "short i/DPAS | 2D loads (transposed) | prefetch | other sends | sync |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        short = _fmt(r["short_per_dpas"]) if r["skippable"] else "-"
        lines.append(f"| {r['target']} | {r['d']} | {'yes' if r['causal'] else 'no'} | {r['compiler']} | "
                     f"{r['tiles']} | {r['loop']} | {r['grf']} | {r['spill']} | {r['instructions']} | {r['dpas']} | "
                     f"{_fmt(r['per_dpas'])} | {short} | {r['load2d']} ({r['load2d_kinds'].get('transposed', 0)}) | "
                     f"{r['prefetch']} | {r['other_sends']} | {r['sync']} |")
    return "\n".join(lines)


def roles_table(rows: list[dict]) -> str:
    """Per DPAS, by role, on the short path (all paths for loops without skipping branches)."""
    used = [name for name in ROLES if any(r["short_roles"].get(name) for r in rows)]
    head = "| target | D | causal | compiler | loop | " + " | ".join(used) + " | total |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        cells = [f"{r['short_roles'].get(name, 0) / r['dpas']:.2f}" for name in used]
        total = sum(r["short_roles"].values()) / r["dpas"]
        lines.append(f"| {r['target']} | {r['d']} | {'yes' if r['causal'] else 'no'} | {r['compiler']} | "
                     f"{r['loop']} | " + " | ".join(cells) + f" | {total:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", nargs="+", default=["pvc", "bmg"])
    parser.add_argument("--head-dims", nargs="+", type=int, default=list(HEAD_DIMS))
    parser.add_argument("--out", type=Path, default=Path("/tmp/peer-attention-isa"),
                        help="where the SPIR-V and ISA listings go")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    if not triton_python().exists():
        print(f"peer_attention_isa: no Triton-XPU venv at {triton_python()} (make it with "
              "/work/shared/tools/isa-compare/setup_triton.sh); nothing measured")
        return 0
    rows = []
    for target in args.targets:
        for d in args.head_dims:
            for causal in (False, True):
                for make in (triton_rows, ours_rows):
                    for r in make(args.out, target, d, causal):
                        rows.append({"target": target, "d": d, "causal": causal, **r})
                        print(f"{target} D={d} causal={causal} {r['compiler']} {r['loop']}: "
                              f"{r['per_dpas']:.2f} per DPAS ({r['short_per_dpas']:.2f} short path)",
                              file=sys.stderr, flush=True)
    print(counts_table(rows))
    print()
    print("Instructions per DPAS by role (short path):")
    print()
    print(roles_table(rows))
    print()
    for name in ROLES:
        if name in ROLE_HELP:
            print(f"* {name}: {ROLE_HELP[name]}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
