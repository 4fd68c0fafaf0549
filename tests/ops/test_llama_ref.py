"""llama_ref.py, the numpy Llama a Llama example is checked against, against itself and
an independent formulation: decoding through the KV cache gives the logits of the whole
sequence recomputed at once; the forward agrees with one written with torch's own
primitives (``F.rms_norm``, ``F.scaled_dot_product_attention`` with ``enable_gqa``, rotary
embeddings as complex multiplication, Meta's form, for "gptj" and torch's rotate-half
for "neox") in float64; and ops.rope in the interpreter rotates as llama_ref.rope does."""
from __future__ import annotations

import numpy as np
import pytest

from conftest_tools import require_torch
from llama_ref import LlamaConfig, forward, generate, new_cache, random_weights, rope
from llm_ref import rope_ref
from ops_ref import assert_within
from xetile_dsl import ops

CONFIG = LlamaConfig(vocab=64, dim=64, n_layers=2, n_heads=4, n_kv_heads=2, hidden=80)


def test_cached_decoding_matches_the_full_forward():
    """The logits of each decoded token (prefill 5, then 6 single-token steps) equal those
    of one cacheless forward over all 11 (f64: a few ulp of summation order)."""
    weights = random_weights(CONFIG, seed=1)
    tokens = generate(CONFIG, weights, [3, 1, 4, 1, 5], n_new=6)
    assert len(tokens) == 11 and all(0 <= t < CONFIG.vocab for t in tokens)
    full = forward(CONFIG, weights, tokens)
    assert [int(t) for t in np.argmax(full[4:-1], axis=-1)] == tokens[5:]
    cache = new_cache(CONFIG)
    step = [forward(CONFIG, weights, tokens[:5], cache=cache)]
    step += [forward(CONFIG, weights, [t], cache=cache) for t in tokens[5:]]
    np.testing.assert_allclose(np.concatenate(step), full, rtol=0, atol=1e-10)


@pytest.mark.parametrize("style", ["neox", "gptj"])
def test_forward_matches_torch_primitives(style):
    torch = require_torch()
    F = torch.nn.functional
    config = LlamaConfig(**{**CONFIG.__dict__, "rope_style": style})
    weights = random_weights(config, seed=2)
    tokens = np.array([7, 0, 63, 12, 12, 5, 40])
    T, H, Hkv, D = len(tokens), config.n_heads, config.n_kv_heads, config.head_dim
    t = {k: torch.from_numpy(v) for k, v in weights.items() if k != "layers"}
    freqs = torch.outer(torch.arange(T, dtype=torch.float64),
                        1.0 / config.theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))

    def rotary(x):                                    # x [T, heads, D]
        if style == "gptj":
            z = torch.view_as_complex(x.reshape(*x.shape[:-1], D // 2, 2).contiguous())
            return torch.view_as_real(z * torch.polar(torch.ones_like(freqs), freqs)[:, None]).flatten(-2)
        cos, sin = torch.cat([freqs.cos()] * 2, -1)[:, None], torch.cat([freqs.sin()] * 2, -1)[:, None]
        half = torch.cat([-x[..., D // 2:], x[..., :D // 2]], -1)
        return x * cos + half * sin

    x = t["embed"][torch.from_numpy(tokens)]
    for layer in weights["layers"]:
        w = {k: torch.from_numpy(v) for k, v in layer.items()}
        h = F.rms_norm(x, (config.dim,), w["attn_norm"], config.eps)
        q = rotary((h @ w["wq"]).view(T, H, D)).transpose(0, 1)
        k = rotary((h @ w["wk"]).view(T, Hkv, D)).transpose(0, 1)
        v = (h @ w["wv"]).view(T, Hkv, D).transpose(0, 1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + o.transpose(0, 1).reshape(T, config.dim) @ w["wo"]
        h = F.rms_norm(x, (config.dim,), w["mlp_norm"], config.eps)
        x = x + (F.silu(h @ w["w_gate"]) * (h @ w["w_up"])) @ w["w_down"]
    logits = F.rms_norm(x, (config.dim,), t["norm"], config.eps) @ t["lm_head"]
    np.testing.assert_allclose(forward(config, weights, tokens), logits.numpy(), rtol=0, atol=1e-10)


@pytest.mark.parametrize("style", ["neox", "gptj"])
def test_ops_rope_rotates_as_the_reference_model(style):
    """ops.rope (f32, interpreter) within llm_ref's derived bound of llama_ref.rope (f64)."""
    rng = np.random.default_rng(3)
    q, k = (rng.standard_normal((6, h, 64)).astype(np.float32) for h in (4, 2))
    pos = np.array([0, 3, 9, 100, 4095, 100000], np.int32)
    expect_q, expect_k = rope(q.astype(np.float64), pos, 10000.0, style), rope(k.astype(np.float64), pos, 10000.0, style)
    bound_q, bound_k = rope_ref(q, pos, 10000.0, style)[1], rope_ref(k, pos, 10000.0, style)[1]
    ops.rope(q, k, pos, style=style, target="interpret")
    assert_within(q, expect_q, bound_q, f"q {style}")
    assert_within(k, expect_k, bound_k, f"k {style}")
