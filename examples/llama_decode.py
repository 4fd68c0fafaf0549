"""Greedy decoding of a small Llama through xetile_dsl.ops, with int4 weights and a paged KV cache.

    python examples/llama_decode.py [--target interpret|cpu-pvc|...] [--tokens 32] [--prompt 8]

The model is Llama's decoder (RMSNorm, rotary embeddings in the "neox" style, grouped-query
attention, the SwiGLU MLP) with seeded random weights (:class:`Config`: d_model 256, two
layers, 4 query heads / 2 key-value heads of 64, MLP 512, vocab 512).  Every linear layer
(q/k/v fused, o, gate/up fused, down, the LM head) is quantised to int4 with
``ops.quantize_weights`` (asymmetric, groups of 128 rows) and runs as ``ops.matmul_wq``;
activations are f16.  Per layer::

    h, res  = add_rms_norm(x, res, attn_norm)         (the first layer: rms_norm, res = x)
    qkv     = matmul_wq(h, wqkv);  rope(q, k, pos)    (in place)
    k, v   -> the paged cache (block_size 16: a host-side scatter through the block table)
    o       = attention(q, k, v, causal)  prefill  |  decode_attention(q, cache, table, lens)
    x       = matmul_wq(o, wo)
    h, res  = add_rms_norm(x, res, mlp_norm)
    x       = matmul_wq(silu_mul(matmul_wq(h, w_gate_up)), w_down)

and at the end ``logits = matmul_wq(add_rms_norm(x, res, norm), lm_head)``; the next token is
the argmax, taken on the host.  The KV cache writes are done on the host (numpy, or dpnp
setitem on the device), not by a kernel.

:func:`reference_generate` is a numpy model of the SAME quantised model: the dequantised
weights (``ops.matmul_wq``'s f16 dequantisation), every op computed in float64 from f16
inputs and rounded to f16 where the op rounds its result, in the same order.  It differs
from the kernels only by the order of f32 sums (and the f32 / float64 gap), far below the
argmax margins of this seed (tests/ops/test_llama_decode.py asserts both).

Arrays: numpy on the interpreter and the CPU device; dpnp (when installed) on an Intel GPU.
"""
from __future__ import annotations

import argparse
import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from xetile_dsl import ops
from xetile_dsl.ops.matmul_wq import dequantize

BLOCK_SIZE = 16
GROUP = 128


@dataclass(frozen=True)
class Config:
    vocab: int = 512
    dim: int = 256
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    head_dim: int = 64
    hidden: int = 512
    eps: float = 1e-6
    theta: float = 10000.0
    logit_scale: float = 4.0   # the LM head's std: peaked next-token distributions, like a trained model


def random_model(config: Config = Config(), seed: int = 1) -> dict:
    """Seeded f16 weights, the linear ones [in, out] quantised: ``{"embed": [vocab, dim] f16,
    "layers": [{"attn_norm", "mlp_norm": [dim] f16, "wqkv", "wo", "w_gate_up", "w_down":
    (w_packed, scales, zeros)}], "norm": [dim] f16, "lm_head": (w_packed, scales, zeros)}``."""
    c = config
    rng = np.random.default_rng(seed)
    qkv = (c.n_heads + 2 * c.n_kv_heads) * c.head_dim

    def linear(n_in, n_out, scale=1.0):
        w = (scale * rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float16)
        return ops.quantize_weights(w, bits=4, group_size=GROUP)

    def norm():
        return (1 + 0.1 * rng.standard_normal(c.dim)).astype(np.float16)

    layers = [{"attn_norm": norm(), "wqkv": linear(c.dim, qkv), "wo": linear(c.n_heads * c.head_dim, c.dim),
               "mlp_norm": norm(), "w_gate_up": linear(c.dim, 2 * c.hidden), "w_down": linear(c.hidden, c.dim)}
              for _ in range(c.n_layers)]
    return {"embed": rng.standard_normal((c.vocab, c.dim)).astype(np.float16), "layers": layers, "norm": norm(),
            "lm_head": linear(c.dim, c.vocab, c.logit_scale)}


class Timer:
    """Seconds per op class (wall clock around each call, host copies included; device
    arrays: until their queue has finished)."""

    def __init__(self):
        self.seconds, self.calls = defaultdict(float), defaultdict(int)

    def __call__(self, name, fn, *args, **kwargs):
        t0 = time.perf_counter()
        result = fn(*args, **kwargs)
        first = result[0] if isinstance(result, tuple) else result
        if hasattr(first, "sycl_queue"):
            first.sycl_queue.wait()
        self.seconds[name] += time.perf_counter() - t0
        self.calls[name] += 1
        return result

    def table(self) -> str:
        total = sum(self.seconds.values())
        rows = [f"{'op':<18}{'calls':>7}{'seconds':>10}{'share':>8}"]
        for name, s in sorted(self.seconds.items(), key=lambda kv: -kv[1]):
            rows.append(f"{name:<18}{self.calls[name]:>7}{s:>10.3f}{s / max(total, 1e-12):>8.1%}")
        return "\n".join(rows)


def generate(config: Config, model: dict, prompt, n_new: int, target: str | None = None, xp=np,
             timer: Timer | None = None, return_logits: bool = False):
    """Greedy decoding through xetile_dsl.ops: the prompt in one prefill (causal
    ``ops.attention``), then ``n_new`` tokens one at a time (``ops.decode_attention`` over
    the paged cache).  Returns the prompt followed by the new token ids (and, with
    ``return_logits``, the f32 logits [n_new, vocab] each new token was chosen from)."""
    c, t = config, timer or Timer()
    to_dev = (lambda a: a) if xp is np else xp.asarray
    dev = {"embed": model["embed"], "norm": to_dev(model["norm"]), "lm_head": tuple(map(to_dev, model["lm_head"])),
           "layers": [{k: (tuple(map(to_dev, v)) if isinstance(v, tuple) else to_dev(v)) for k, v in layer.items()}
                      for layer in model["layers"]]}
    total = len(prompt) + n_new
    max_blocks = -(-total // BLOCK_SIZE)
    # physical blocks in a scrambled order: the table, not the layout, says where a token lives
    table_host = np.random.default_rng(1).permutation(max_blocks).astype(np.int32)[None, :]
    block_table = to_dev(table_host)
    shape = (max_blocks, BLOCK_SIZE, c.n_kv_heads, c.head_dim)
    caches = [(xp.zeros(shape, dtype=np.float16), xp.zeros(shape, dtype=np.float16)) for _ in range(c.n_layers)]
    tokens, logits_out = [int(v) for v in prompt], []
    H, KVH, D = c.n_heads, c.n_kv_heads, c.head_dim

    def step(ids, start):
        T = len(ids)
        pos_host = np.arange(start, start + T, dtype=np.int32)
        positions = to_dev(pos_host)
        x = to_dev(model["embed"][np.asarray(ids)])                 # the embedding gather, on the host
        res = None
        for layer, (kc, vc) in zip(dev["layers"], caches):
            if res is None:
                res = x
                h = t("rms_norm", ops.rms_norm, x, layer["attn_norm"], c.eps, target=target)
            else:
                h, res = t("add_rms_norm", ops.add_rms_norm, x, res, layer["attn_norm"], c.eps, target=target)
            qkv = t("matmul_wq", ops.matmul_wq, h, *layer["wqkv"], target=target)
            q = xp.ascontiguousarray(qkv[:, :H * D]).reshape(T, H, D)
            k = xp.ascontiguousarray(qkv[:, H * D:(H + KVH) * D]).reshape(T, KVH, D)
            v = xp.ascontiguousarray(qkv[:, (H + KVH) * D:]).reshape(T, KVH, D)
            t("rope", ops.rope, q, k, positions, c.theta, "neox", target=target)
            for i, p in enumerate(pos_host):                         # the cache write, on the host
                blk, slot = int(table_host[0, p // BLOCK_SIZE]), int(p % BLOCK_SIZE)
                kc[blk, slot], vc[blk, slot] = k[i], v[i]
            if T > 1:
                o = t("attention", ops.attention, q.transpose(1, 0, 2)[None], k.transpose(1, 0, 2)[None],
                      v.transpose(1, 0, 2)[None], causal=True, target=target)[0].transpose(1, 0, 2)
                o = xp.ascontiguousarray(o)
            else:
                lens = to_dev(np.array([start + 1], np.int32))
                o = t("decode_attention", ops.decode_attention, q, kc, vc, block_table, lens, target=target)
            x = t("matmul_wq", ops.matmul_wq, o.reshape(T, H * D), *layer["wo"], target=target)
            h, res = t("add_rms_norm", ops.add_rms_norm, x, res, layer["mlp_norm"], c.eps, target=target)
            g = t("silu_mul", ops.silu_mul, t("matmul_wq", ops.matmul_wq, h, *layer["w_gate_up"], target=target),
                  target=target)
            x = t("matmul_wq", ops.matmul_wq, g, *layer["w_down"], target=target)
        h, _ = t("add_rms_norm", ops.add_rms_norm, x, res, dev["norm"], c.eps, target=target)
        logits = t("matmul_wq", ops.matmul_wq, h[-1:], *dev["lm_head"], target=target)
        return np.asarray(logits if xp is np else xp.asnumpy(logits), np.float32)[0]

    logits = step(tokens, 0)
    for _ in range(n_new):
        logits_out.append(logits)
        tokens.append(int(np.argmax(logits)))
        if len(tokens) < total:
            logits = step(tokens[-1:], len(tokens) - 1)
    return (tokens, np.stack(logits_out)) if return_logits else tokens


# ---------------------------------------------------------------- the numpy reference

def _f16(x):
    return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)


def _rms(x, w, eps):       # f16 x -> f16 (f32 math in the kernel, float64 here)
    return _f16(x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w)


def _rope(x, positions, theta):
    D = x.shape[-1]
    inv_freq = (theta ** (-np.arange(0, D, 2) / D)).astype(np.float32).astype(np.float64)
    angle = np.asarray(positions, np.float64)[:, None] * inv_freq
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    x1, x2 = x[..., :D // 2], x[..., D // 2:]
    return _f16(np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1))


def _attention(q, k, v, q_pos, k_pos):   # q [Tq, H, D], k/v [Tk, KVH, D]; f16 out
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(q.shape[-1])
    s = np.where(np.asarray(k_pos)[None, None, :] <= np.asarray(q_pos)[None, :, None], s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return _f16(np.einsum("hqk,khd->qhd", p / p.sum(-1, keepdims=True), v))


def dequantised(config: Config, model: dict) -> dict:
    """``model`` with each quantised linear replaced by the float64 [in, out] matrix
    ``ops.matmul_wq`` multiplies by (its f16 dequantisation)."""
    def w(packed, k):
        return dequantize(*packed, bits=4, K=k, group_size=GROUP).astype(np.float64)

    c = config
    return {"embed": model["embed"].astype(np.float64), "norm": model["norm"].astype(np.float64),
            "lm_head": w(model["lm_head"], c.dim),
            "layers": [{"attn_norm": L["attn_norm"].astype(np.float64), "mlp_norm": L["mlp_norm"].astype(np.float64),
                        "wqkv": w(L["wqkv"], c.dim), "wo": w(L["wo"], c.n_heads * c.head_dim),
                        "w_gate_up": w(L["w_gate_up"], c.dim), "w_down": w(L["w_down"], c.hidden)}
                       for L in model["layers"]]}


def reference_generate(config: Config, model: dict, prompt, n_new: int, return_logits: bool = False):
    """:func:`generate` in numpy: float64 math on the dequantised weights, rounded to f16
    wherever the kernels round (each op's output, the residual sums); the same op order."""
    c, m = config, dequantised(config, model)
    H, KVH, D = c.n_heads, c.n_kv_heads, c.head_dim
    cache = [([], []) for _ in range(c.n_layers)]
    tokens, logits_out = [int(v) for v in prompt], []
    total = len(prompt) + n_new

    def step(ids, start):
        T = len(ids)
        pos = np.arange(start, start + T)
        x, res = m["embed"][np.asarray(ids)], None
        for L, (ks, vs) in zip(m["layers"], cache):
            if res is None:
                res, h = x, _rms(x, L["attn_norm"], c.eps)
            else:
                res = _f16(x + res)
                h = _rms(res, L["attn_norm"], c.eps)
            qkv = _f16(h @ L["wqkv"])
            q = _rope(qkv[:, :H * D].reshape(T, H, D), pos, c.theta)
            k = _rope(qkv[:, H * D:(H + KVH) * D].reshape(T, KVH, D), pos, c.theta)
            ks.append(k)
            vs.append(qkv[:, (H + KVH) * D:].reshape(T, KVH, D))
            kk, vv = np.concatenate(ks), np.concatenate(vs)
            o = _attention(q, kk, vv, pos, np.arange(len(kk)))
            x = _f16(o.reshape(T, H * D) @ L["wo"])
            res = _f16(x + res)
            h = _rms(res, L["mlp_norm"], c.eps)
            gu = _f16(h @ L["w_gate_up"])
            a, b = gu[:, :c.hidden], gu[:, c.hidden:]
            x = _f16(_f16(a / (1 + np.exp(-a)) * b) @ L["w_down"])
        h = _rms(_f16(x + res), m["norm"], c.eps)
        return _f16(h[-1:] @ m["lm_head"])[0]

    logits = step(tokens, 0)
    for _ in range(n_new):
        logits_out.append(logits)
        tokens.append(int(np.argmax(logits)))
        if len(tokens) < total:
            logits = step(tokens[-1:], len(tokens) - 1)
    return (tokens, np.stack(logits_out)) if return_logits else tokens


def default_prompt(config: Config, seed: int = 1, length: int = 8) -> list[int]:
    """The example's prompt: ``length`` seeded random token ids."""
    return np.random.default_rng(seed + 1).integers(0, config.vocab, length).tolist()


def _array_module(target: str | None, arrays: str):
    """``arrays`` ("numpy", "dpnp"), or for "auto" dpnp on a GPU device when it is installed, else numpy."""
    from xetile_dsl.runtime.devices import get_device
    if arrays != "auto":
        return np if arrays == "numpy" else __import__("dpnp")
    if target is None and get_device().kind == "gpu":
        try:
            import dpnp
            return dpnp
        except ImportError:
            pass
    return np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=None, help="interpret, cpu-pvc, ... (default: the default device's)")
    ap.add_argument("--tokens", type=int, default=32, help="tokens to generate")
    ap.add_argument("--prompt", type=int, default=8, help="prompt length (random token ids)")
    ap.add_argument("--seed", type=int, default=1, help="weights and prompt (1: argmax margins the tests check)")
    ap.add_argument("--arrays", choices=["auto", "numpy", "dpnp"], default="auto",
                    help="auto: dpnp on an Intel GPU when installed, else numpy")
    ap.add_argument("--check", action="store_true", help="compare the tokens with reference_generate()")
    args = ap.parse_args()
    config = Config()
    model = random_model(config, args.seed)
    prompt = default_prompt(config, args.seed, args.prompt)
    xp = _array_module(args.target, args.arrays)
    target = ops.configs.resolve_target(args.target)
    print(f"model: {config}\ntarget: {target}, arrays: {xp.__name__}, prompt {prompt}")
    generate(config, model, prompt, 2, target=target, xp=xp)     # compiles (or loads) every kernel
    timer = Timer()
    t0 = time.perf_counter()
    tokens = generate(config, model, prompt, args.tokens, target=target, xp=xp, timer=timer)
    seconds = time.perf_counter() - t0
    print(f"generated: {tokens[len(prompt):]}")
    print(f"{args.tokens} tokens in {seconds:.2f} s: {args.tokens / seconds:.2f} tokens/s "
          f"(prefill of {len(prompt)} included)")
    print(timer.table())
    if args.check:
        same = reference_generate(config, model, prompt, args.tokens) == tokens
        print(f"numpy reference: {'same tokens' if same else 'DIFFERENT tokens'}")
        raise SystemExit(0 if same else 1)


if __name__ == "__main__":
    main()
