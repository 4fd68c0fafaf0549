"""Triton's tl.randint/randint4x/rand/randn on a CUDA GPU, saved as the reference data of
tests/interpreter/test_triton_random_reference.py.  Run on a machine with triton and a GPU:
python3 scripts/triton_random_reference.py OUTDIR  (writes OUTDIR/triton_random.npz, no pickle)."""
import json
import sys

import numpy as np
import torch
import triton
import triton.language as tl

SEEDS = [0, 1, 12345, 2**31 - 1, -7, 2**32 + 5, 2**40 + 3, -(2**40) - 9]
OFFSETS = np.concatenate([np.arange(1024), [2**31 - 1, -1, -(2**31), 123456789, -5, 1 << 20, 65535, 1000003]])


@triton.jit
def draw(seed, offs_ptr, w_ptr, r_ptr, u_ptr, n_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    o = tl.load(offs_ptr + i, mask=m)
    a, b, c, d = tl.randint4x(seed, o)
    tl.store(w_ptr + 4 * i, a, mask=m)
    tl.store(w_ptr + 4 * i + 1, b, mask=m)
    tl.store(w_ptr + 4 * i + 2, c, mask=m)
    tl.store(w_ptr + 4 * i + 3, d, mask=m)
    tl.store(r_ptr + i, tl.randint(seed, o), mask=m)
    tl.store(u_ptr + i, tl.rand(seed, o), mask=m)
    tl.store(n_ptr + i, tl.randn(seed, o), mask=m)


def main(out):
    offs = torch.tensor(OFFSETS.astype(np.int32), device="cuda")
    n = offs.numel()
    res = {"seeds": np.array(SEEDS, dtype=np.int64), "offsets": OFFSETS.astype(np.int32)}
    words, ints, unif, norm = [], [], [], []
    for s in SEEDS:
        w = torch.empty(4 * n, dtype=torch.int32, device="cuda")
        r, u, z = (torch.empty(n, dtype=t, device="cuda") for t in (torch.int32, torch.float32, torch.float32))
        draw[(triton.cdiv(n, 256),)](s, offs, w, r, u, z, n, BLOCK=256)
        words.append(w.cpu().numpy().view(np.uint32).reshape(n, 4).T)
        ints.append(r.cpu().numpy().view(np.uint32))
        unif.append(u.cpu().numpy())
        norm.append(z.cpu().numpy())
    res["randint4x"], res["rand"], res["randn"] = np.stack(words), np.stack(unif), np.stack(norm)
    same = all((a[0] == b).all() for a, b in zip(words, ints))
    np.savez_compressed(f"{out}/triton_random.npz", **res)
    meta = {"triton": triton.__version__, "torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
            "randint_equals_randint4x_word0": bool(same), "shape_randint4x": list(res["randint4x"].shape)}
    json.dump(meta, open(f"{out}/meta.json", "w"))
    print(json.dumps(meta))


if __name__ == "__main__":
    main(sys.argv[1])
