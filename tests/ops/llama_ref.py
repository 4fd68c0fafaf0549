"""A small Llama in numpy (float64 by default): the reference a Llama example built from
xetile_dsl.ops (matmul, rms_norm / add_rms_norm, rope, attention, silu_mul) is checked
against.

The model is Llama's decoder: token embedding; per layer ``h = x + attn(rms_norm(x))``
and ``x = h + mlp(rms_norm(h))`` with grouped-query attention (``n_kv_heads`` dividing
``n_heads``, each key/value head serving ``n_heads / n_kv_heads`` query heads), rotary
embeddings on q and k (``"neox"``: halves, as Hugging Face's checkpoints; ``"gptj"``:
interleaved pairs, as Meta's original code) and the SwiGLU MLP ``w_down(silu(x w_gate) *
(x w_up))``; a final RMS norm and the LM head. Weights are [in, out] (``x @ w``).
:func:`generate` decodes greedily with a KV cache; :func:`forward` without a cache is the
same computation for every position at once.

Example::

    config = LlamaConfig(vocab=64, dim=32, n_layers=2, n_heads=4, n_kv_heads=2, hidden=48)
    weights = random_weights(config, seed=0)
    tokens = generate(config, weights, [1, 5, 9], n_new=4)     # 3 + 4 token ids
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LlamaConfig:
    vocab: int = 128
    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    hidden: int = 96          # the MLP's inner width
    eps: float = 1e-6         # RMS norm
    theta: float = 10000.0    # rotary base
    rope_style: str = "neox"

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    def __post_init__(self):
        if self.dim % self.n_heads or self.n_heads % self.n_kv_heads or self.head_dim % 2:
            raise ValueError(f"LlamaConfig: dim {self.dim} must split into n_heads {self.n_heads} heads of an even "
                             f"size, and n_kv_heads {self.n_kv_heads} must divide n_heads")
        if self.rope_style not in ("neox", "gptj"):
            raise ValueError(f"LlamaConfig: rope_style 'neox' or 'gptj', got {self.rope_style!r}")


def random_weights(config: LlamaConfig, seed: int = 0, dtype=np.float64) -> dict:
    """Weights with a scale that keeps activations O(1): ``{"embed": [vocab, dim],
    "layers": [{"attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w_gate", "w_up",
    "w_down"}, ...], "norm": [dim], "lm_head": [dim, vocab]}``."""
    rng = np.random.default_rng(seed)
    c = config
    kv = c.n_kv_heads * c.head_dim

    def linear(n_in, n_out):
        return (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(dtype)

    def norm():
        return (1 + 0.1 * rng.standard_normal(c.dim)).astype(dtype)

    layers = [{"attn_norm": norm(), "wq": linear(c.dim, c.dim), "wk": linear(c.dim, kv), "wv": linear(c.dim, kv),
               "wo": linear(c.dim, c.dim), "mlp_norm": norm(), "w_gate": linear(c.dim, c.hidden),
               "w_up": linear(c.dim, c.hidden), "w_down": linear(c.hidden, c.dim)} for _ in range(c.n_layers)]
    return {"embed": rng.standard_normal((c.vocab, c.dim)).astype(dtype), "layers": layers, "norm": norm(),
            "lm_head": linear(c.dim, c.vocab)}


def rms_norm(x, weight, eps):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last dimension."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def silu(x):
    return x / (1.0 + np.exp(-x))


def rope(x, positions, theta: float, style: str):
    """x [tokens, heads, D] rotated by ``positions[t] * theta^(-2i/D)`` (a new array)."""
    D = x.shape[-1]
    angle = np.asarray(positions, np.float64)[:, None] * theta ** (-np.arange(0, D, 2) / D)
    c, s = np.cos(angle)[:, None, :].astype(x.dtype), np.sin(angle)[:, None, :].astype(x.dtype)
    out = np.empty_like(x)
    if style == "neox":
        x1, x2 = x[..., :D // 2], x[..., D // 2:]
        out[..., :D // 2], out[..., D // 2:] = x1 * c - x2 * s, x2 * c + x1 * s
    else:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out[..., 0::2], out[..., 1::2] = x1 * c - x2 * s, x2 * c + x1 * s
    return out


def attention(q, k, v, q_positions, k_positions):
    """Causal grouped-query attention: q [Tq, H, D], k and v [Tk, Hkv, D]; query i sees
    keys j with ``k_positions[j] <= q_positions[i]``; returns [Tq, H, D]."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(q.shape[-1])
    visible = np.asarray(k_positions)[None, None, :] <= np.asarray(q_positions)[None, :, None]
    scores = np.where(visible, scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("hqk,khd->qhd", p, v)


def mlp(x, layer):
    return (silu(x @ layer["w_gate"]) * (x @ layer["w_up"])) @ layer["w_down"]


def new_cache(config: LlamaConfig) -> list:
    """An empty KV cache: per layer, the keys, values and positions seen so far."""
    kv = (0, config.n_kv_heads, config.head_dim)
    return [{"k": np.zeros(kv), "v": np.zeros(kv), "pos": np.zeros(0, np.int64)} for _ in range(config.n_layers)]


def forward(config: LlamaConfig, weights: dict, tokens, positions=None, cache: list | None = None):
    """Logits [T, vocab] of ``tokens`` [T] at ``positions`` (default: after what ``cache``
    holds, else 0 .. T-1); ``cache`` (from :func:`new_cache`) is extended in place."""
    c = config
    tokens = np.asarray(tokens)
    if positions is None:
        start = 0 if cache is None else len(cache[0]["pos"])
        positions = np.arange(start, start + len(tokens))
    positions = np.asarray(positions, np.int64)
    x = weights["embed"][tokens]
    T = len(tokens)
    for i, layer in enumerate(weights["layers"]):
        h = rms_norm(x, layer["attn_norm"], c.eps)
        q = rope((h @ layer["wq"]).reshape(T, c.n_heads, c.head_dim), positions, c.theta, c.rope_style)
        k = rope((h @ layer["wk"]).reshape(T, c.n_kv_heads, c.head_dim), positions, c.theta, c.rope_style)
        v = (h @ layer["wv"]).reshape(T, c.n_kv_heads, c.head_dim)
        k_pos = positions
        if cache is not None:
            entry = cache[i]
            entry["k"] = k = np.concatenate([entry["k"].astype(k.dtype), k])
            entry["v"] = v = np.concatenate([entry["v"].astype(v.dtype), v])
            entry["pos"] = k_pos = np.concatenate([entry["pos"], positions])
        o = attention(q, k, v, positions, k_pos).reshape(T, c.dim)
        x = x + o @ layer["wo"]
        x = x + mlp(rms_norm(x, layer["mlp_norm"], c.eps), layer)
    return rms_norm(x, weights["norm"], c.eps) @ weights["lm_head"]


def generate(config: LlamaConfig, weights: dict, prompt, n_new: int) -> list[int]:
    """Greedy decoding: the prompt in one forward (prefill), then one token per step
    through the KV cache; returns the prompt followed by ``n_new`` token ids."""
    cache = new_cache(config)
    tokens = [int(t) for t in prompt]
    logits = forward(config, weights, tokens, cache=cache)
    for _ in range(n_new):
        tokens.append(int(np.argmax(logits[-1])))
        logits = forward(config, weights, tokens[-1:], cache=cache)
    return tokens
