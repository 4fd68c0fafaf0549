"""Flash-attention backward machine code against the forward's (static, no GPU).

    python benchmarks/attention_backward_isa.py [--targets pvc bmg] [--dims 32 64 128]

For each target and head dim: the forward (ops.attention's kernel as launched, causal f16)
and the backward's dq and dk/dv kernels (ops.attention_backward's, causal f16, one query
head per key/value head, configs.attention_backward_tiles), each compiled with ocloc and
counted by the ISA report (tools/isa_report.py): per loop with DPAS, its DPAS and
instructions per DPAS, and the kernel's spill bytes.  The forward's count is its key
loop's; the backward kernels have one loop per masked and unmasked range, and at D = 128
the register budget splits each into two copies (xegpu-split-accumulators), all shown.
"""
from __future__ import annotations

import argparse

import xetile_dsl as xd
from xetile_dsl.ops import configs
from xetile_dsl.ops.attention import attention_nd_kernel
from xetile_dsl.ops.attention_backward import attention_bwd_dkdv_kernel, attention_bwd_dq_kernel, kernel_signatures
from xetile_dsl.ops.matmul import XT_DTYPES

F16 = XT_DTYPES["float16"]
FORWARD_SIG, DQ_SIG, DKDV_SIG = kernel_signatures("f16").values()


def reports(target: str, d: int) -> dict:
    """{kernel name: ISA report} of the forward and both backward kernels."""
    BM, BN = configs.attention_tiles(target, d)
    fwd = {"CAUSAL": True, "OUT": F16, "D": d, "BM": BM, "BN": BN, "SCALED": False}
    BM, BN, BK = configs.attention_backward_tiles(target, d)
    bwd = {"CAUSAL": True, "OUT": F16, "D": d, "BM": BM}
    return {"forward": xd.compile(attention_nd_kernel, FORWARD_SIG, fwd, target=target).report(),
            "dq": xd.compile(attention_bwd_dq_kernel, DQ_SIG, {**bwd, "BN": BK}, target=target).report(),
            "dk/dv": xd.compile(attention_bwd_dkdv_kernel, DKDV_SIG, {**bwd, "BN": BN, "G": 1},
                                target=target).report()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=["pvc"])
    parser.add_argument("--dims", nargs="+", type=int, default=[64, 128])
    args = parser.parse_args()
    print(f"{'target':6} {'D':>4} {'kernel':8} {'spill B':>8}  loops (DPAS: instructions per DPAS)")
    for target in args.targets:
        for d in args.dims:
            for name, report in reports(target, d).items():
                loops = [loop for loop in report.loops if loop.dpas]
                if name == "forward":
                    loops = loops[:1]
                cells = ", ".join(f"{loop.dpas}: {loop.instructions_per_dpas:.2f}" for loop in loops)
                print(f"{target:6} {d:>4} {name:8} {report.spill_bytes:>8}  {cells}", flush=True)


if __name__ == "__main__":
    main()
