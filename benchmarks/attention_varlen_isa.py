"""Variable-length (``cu_seqlens``) flash-attention forward machine code against the dense
forward's (static, no GPU).

    python benchmarks/attention_varlen_isa.py [--targets pvc bmg] [--dims 64 128]

For each target and head dim: ops.attention's dense kernel (attention_nd_kernel) and its
varlen kernel (attention_varlen_kernel), as launched (configs.attention_tiles, causal f16,
the default positive scale), each compiled with ocloc and counted by the ISA report
(tools/isa_report.py): the key loop's DPAS and instructions per DPAS (all of it, and the
short path past the lazy rescale), and the kernel's spill bytes.
"""
from __future__ import annotations

import argparse

import xetile_dsl as xd
from xetile_dsl.ops import configs
from xetile_dsl.ops.attention import attention_nd_kernel, attention_varlen_kernel
from xetile_dsl.ops.matmul import XT_DTYPES

F16 = XT_DTYPES["float16"]
A4, A3 = "f16[:,:,:,:]", "f16[:,:,:]"
DENSE_SIG = {"q": A4, "k": A4, "v": A4, "o": A4, "lse": "f32[:,:,:]", "N": "i32", "H": "i32", "G": "i32",
             "qk_scale": "f32", "with_lse": "i32"}
VARLEN_SIG = {"q": A3, "k": A3, "v": A3, "o": A3, "lse": "f32[:,:]", "cu_seqlens": "i32[:]", "H": "i32",
              "G": "i32", "qk_scale": "f32", "with_lse": "i32"}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=["pvc", "bmg"])
    parser.add_argument("--dims", nargs="+", type=int, default=[64, 128])
    args = parser.parse_args(argv)
    print("| target | D | kernel | DPAS | i/DPAS | short i/DPAS | spill B |")
    print("|---|---|---|---|---|---|---|")
    for target in args.targets:
        for d in args.dims:
            BM, BN = configs.attention_tiles(target, d)
            consts = {"CAUSAL": True, "OUT": F16, "D": d, "BM": BM, "BN": BN, "SCALED": False}
            for name, kernel, sig in (("dense", attention_nd_kernel, DENSE_SIG),
                                      ("varlen", attention_varlen_kernel, VARLEN_SIG)):
                report = xd.compile(kernel, sig, consts, target=target).report()
                hot = report.hot
                short = hot.short_path_instructions_per_dpas
                short = f"{short:.2f}" if short is not None else "-"
                print(f"| {target} | {d} | {name} | {hot.dpas} | {hot.instructions_per_dpas:.2f} | {short} | "
                      f"{report.spill_bytes} |")


if __name__ == "__main__":
    main()
