"""Weight-only int4 GEMM (W4A16) machine code: ops.matmul_wq against Triton-XPU (no GPU).

    python benchmarks/wq_isa.py [--targets pvc bmg] [--out DIR]

Both kernels go Python -> SPIR-V by their own compiler, then SPIR-V -> ISA with the same
ocloc (the project's tools/ocloc.py), and both hot loops are counted by the project's
ISA report (tools/isa_report.py, the counting of /work/shared/tools/isa-compare).  The
figure of merit is hot-loop instructions per weight byte (a K step reads BK x BN / 2
bytes of int4 codes), with the sends the loop reads the weights by.

Ours: matmul_wq_kernel for M = 1 with the tiles ops.matmul_wq launches
(configs.wq_tiles: BM 1, BN 32), asymmetric int4, group 128.  Triton:
benchmarks/peer_w4a16_triton.py (the GPTQ form: pointer loads of int32 words shared by
eight K rows; int32 codes, f16 scales and zero points as ours), run in a Triton-XPU venv (``$TX/venv/bin/python``, TX default /tmp/tx;
made by /work/shared/tools/isa-compare/setup_triton.sh), 16 x 32 and 16 x 64 tiles,
BLOCK_K 128 (and 64), one warp or four, default and large register file.  Triton-XPU 3.3 compiles for "spir64" from device properties
alone, which BMG reports as PVC does, so the bmg rows are the same SPIR-V built for bmg.

fp8 weights (``format="e4m3"`` / ``"e5m2"``, per-channel f16 scales, M = 1) are printed
as our rows only (a K step reads BK x BN bytes of codes); the peer rows are int4.

Without the Triton venv the script prints our rows and says the peer is missing.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.frontend.argspec import ArgSpec
from xetile_dsl.ops import configs
from xetile_dsl.ops.matmul_wq import BLOCK_K, FP8_FORMATS, SYMMETRIC_ZERO, matmul_wq_kernel
from xetile_dsl.targets.target import get_target
from xetile_dsl.tools import isa_report, ocloc

sys.path.insert(0, os.path.dirname(__file__))
from peer_triton import run_peer, triton_python  # noqa: E402

TRITON_SCRIPT = Path(__file__).with_name("peer_w4a16_triton.py")
TRITON_CONFIGS = ("m16-n32", "m16-n64-w4", "m16-n32-k64", "m16-n32-large", "m16-n64-w4-large")
#: the signature the JIT gives ops.matmul_wq's launch (KP specialised as divisible by 16)
OURS_SIG = {"x": "f16[:,:]", "w": "i32[:,:]", "s": "f16[:]", "z": "f16[:]", "c": "f16[:,:]",
            "KP": ArgSpec("scalar", "i32", spec="d16"), "N": "i32"}


def ours_kernel(target: str, bits: int = 4, m: int = 1, group: int = 128, has_z: bool = True, fmt: str = "int"):
    """(compiled kernel, (BM, BN), K rows per hot-loop trip) of ops.matmul_wq for ``m`` rows
    (``fmt`` "e4m3" / "e5m2": fp8 weights, bits 8, per channel, no zero points)."""
    bm, bn = configs.wq_tiles(target, m)
    fp8 = FP8_FORMATS[fmt][1] if fmt != "int" else 0
    consts = dict(BITS=bits, GROUP=group if bits == 4 else 1 << 30, HAS_Z=has_z and not fp8,
                  ZERO=SYMMETRIC_ZERO[bits], IN=xt.float16, OUT=xt.float16, BM=bm, BN=bn, FP8=fp8)
    return xd.compile(matmul_wq_kernel, OURS_SIG, consts, target=target), (bm, bn), BLOCK_K[bits]


def weight_sends(lp) -> str:
    """The loop's 2D block read shapes of 32-bit elements (the packed weights) and its
    per-lane loads, as text."""
    words = {s: n for s, n in lp.load2d_shapes.items() if s.startswith("32b")}
    return ", ".join(f"{n} x {s}" for s, n in sorted(words.items())) + f"; gathers {lp.counts.get('gather', 0)}"


def row(compiler: str, target: str, tiles: str, report, k_rows: int, bn: int, subgroups: int = 1,
        bits: int = 4, weights: str = "int4") -> dict:
    """One table row; the weight bytes are one subgroup's share of a trip (the hot loop
    is one subgroup's code: Triton's warps split the weight tile)."""
    hot = report.hot
    weight_bytes = k_rows * bn * bits // 8 // subgroups
    return {"compiler": compiler, "target": target, "weights": weights, "tiles": tiles, "grf": report.grf_mode,
            "spill": report.spill_bytes, "instructions": hot.instructions, "dpas": hot.dpas,
            "weight_bytes": weight_bytes, "per_byte": hot.instructions / weight_bytes,
            "load2d": hot.counts.get("load2d", 0), "gather": hot.counts.get("gather", 0),
            "reads": weight_sends(hot)}


def ours_row(target: str, fmt: str = "int") -> dict:
    bits = 4 if fmt == "int" else 8
    kernel, (bm, bn), k_rows = ours_kernel(target, bits=bits, fmt=fmt)
    return row("xetile_dsl", target, f"BM {bm} x BN {bn}, K step {k_rows}", kernel.report(), k_rows, bn,
               bits=bits, weights="int4" if fmt == "int" else f"fp8 {fmt}")


def triton_row(out: Path, target: str, name: str) -> dict:
    spirv, meta = run_peer(TRITON_SCRIPT, out, name)
    gpu = get_target(target)
    zebin = ocloc.compile_spirv(spirv, gpu.ocloc_device, meta["build_options"])
    report = isa_report.zebin_report(zebin, meta["kernel"], gpu)
    tiles = (f"{meta['block_m']} x {meta['block_n']}, K step {meta['block_k']}, w{meta['num_warps']}, "
             f"GRF {meta['grf_mode']}")
    return row("Triton-XPU", target, tiles, report, meta["block_k"], meta["block_n"], meta["num_warps"])


def table(rows: list[dict]) -> str:
    head = ("| target | compiler | weights | tiles | GRF | spill B | hot instr | DPAS | weight B/trip/subgroup | instr/weight B | "
            "2D loads | gathers | weight reads |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        lines.append(f"| {r['target']} | {r['compiler']} | {r['weights']} | {r['tiles']} | {r['grf']} | {r['spill']} | "
                     f"{r['instructions']} | {r['dpas']} | {r['weight_bytes']} | {r['per_byte']:.3f} | "
                     f"{r['load2d']} | {r['gather']} | {r['reads']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", nargs="+", default=["pvc", "bmg"])
    parser.add_argument("--out", type=Path, default=Path("/tmp/wq-isa"))
    args = parser.parse_args(argv)
    rows, missing = [], None
    for target in args.targets:
        rows.append(ours_row(target))
        rows.extend(ours_row(target, fmt) for fmt in sorted(FP8_FORMATS))
        if not triton_python().exists():
            missing = f"Triton-XPU venv {triton_python()} missing (setup_triton.sh makes it): peer rows not run"
            continue
        rows.extend(triton_row(args.out, target, name) for name in TRITON_CONFIGS)
    print(table(rows))
    if missing:
        print(missing)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
