"""Flash-attention forward forms compared by machine code (no GPU): ops.attention's
transposed kernel against a candidate whose second product takes V as a VNNI operand B.

    python benchmarks/attention_forms_isa.py [--targets bmg] [--head-dims 128] [--tiles 16x32 16x48 16x64]

ops.attention's form (``transposed``, xetile_dsl/ops/attention.py) computes O^T = V^T P^T:
V^T is operand A, read with transposed 32-bit block messages whose dwords pair two
head-dim columns, where operand A pairs two keys, so every V^T element is moved once more
(word de-interleave moves).  The candidate (``vnni-v``, attention.attention_vnni_kernel, bmg's
D = 128 form) keeps S^T = K Q^T and the softmax down each lane's column as the
transposed form does, then computes O = P V with V a VNNI operand B (plain block
messages with the VNNI transform, no moves) and P = transpose(P^T) as operand A, which
the compiler's tile_transpose stages through SLM (decision 016: a register transpose
does not feed operand A).  The per-query alpha and sum reach O's rows through the same
[1, BM] -> [BM, 1] transposes.  Numbers are the project's ISA report (tools/isa_report.py)
of the innermost DPAS loop, causal and not, f16, scale > 0, and per DPAS by role as
benchmarks/peer_attention_isa.py attributes them (its ``role``).  Triton-XPU's numbers
for the same shapes: benchmarks/peer_attention_isa.py.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import xetile_dsl as xd
from xetile_dsl.ops.attention import attention_kernel, attention_vnni_kernel
from xetile_dsl.ops import configs
from xetile_dsl.ops.matmul import XT_DTYPES

sys.path.insert(0, str(Path(__file__).parent))
import peer_attention_isa as peer  # noqa: E402  (the sibling script: its role attribution and tables)


FORMS = {"transposed": attention_kernel, "vnni-v": attention_vnni_kernel}


def form_row(form: str, target: str, d: int, bm: int, bn: int, causal: bool) -> dict:
    """One row: the ISA report of ``form``'s hot loop at ``bm`` x ``bn``."""
    consts = {"CAUSAL": causal, "OUT": XT_DTYPES["float16"], "D": d, "BM": bm, "BN": bn, "SCALED": False}
    kernel = xd.compile(FORMS[form], peer.OURS_SIG, consts, target=target)
    report = kernel.report()
    loop = next(t for lp, t in peer.dpas_loops(kernel.asm["isa"], report) if lp is report.hot)
    r = peer.row("xetile_dsl", f"{bm}x{bn}", form, report, report.hot, loop)
    return {"target": target, "d": d, "causal": causal, **r}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", nargs="+", default=["bmg"])
    parser.add_argument("--head-dims", nargs="+", type=int, default=[128])
    parser.add_argument("--tiles", nargs="+", default=["16x32", "16x48", "16x64"], help="BMxBN of the candidate")
    args = parser.parse_args(argv)
    rows = []
    for target in args.targets:
        for d in args.head_dims:
            for causal in (False, True):
                tiles = [("transposed", *configs.attention_tiles(target, d))] + [("vnni-v", *map(int, t.split("x"))) for t in args.tiles]
                for form, bm, bn in tiles:
                    r = form_row(form, target, d, bm, bn, causal)
                    rows.append(r)
                    print(f"{target} D={d} causal={causal} {form} {bm}x{bn}: {r['per_dpas']:.2f} per DPAS "
                          f"({r['short_per_dpas']:.2f} short path), spill {r['spill']} B", file=sys.stderr, flush=True)
    print(peer.counts_table(rows))
    print()
    print("Instructions per DPAS by role (short path):")
    print()
    print(peer.roles_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
