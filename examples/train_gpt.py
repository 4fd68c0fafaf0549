"""Train a small GPT through ``torch.ops.xetile``: attention, layer norms, every matmul
(the MLP's gelu fused into its first matmul with ``activation="gelu"``) and the loss are
the xetile ops, forward and backward (ops/autograd.py); torch does the embeddings, the
reshapes, the residual adds and AdamW.

    python examples/train_gpt.py [--steps 200] [--target cpu-pvc|interpret|pvc|...]
                                 [--device cpu|cuda|xpu] [--d-model 128] [--layers 2]
                                 [--context 64] [--batch 8] [--plot loss.png]

The model: byte-level tokens (vocabulary 256) of a public-domain paragraph that ships
inline (the opening of the Declaration of Independence), learned token and position
embeddings, pre-norm blocks of causal multi-head attention (4 heads of d_model / 4: 32
at the default d_model 128; the attention kernels take head dimensions 32, 64 and 128,
so d_model is 128, 256 or 512) and a 4x gelu MLP, a final layer norm and an output projection.  Weights are f32 (AdamW's
state too); the matmuls and attention take them and the activations in f16 (f32
accumulation), the residual stream and the logits are f32.

``--plot FILE`` also trains the same model with torch's own ops (same initial weights,
same batches, the same f16 roundings) and writes both loss curves to FILE (needs
matplotlib: without it the script says so and prints the numbers instead).

``--device`` is where the weights, the batches and AdamW live (torch's device name; default
cpu).  CPU tensors run on the default xetile device or ``--target`` (copied in and out a
launch); ``--device cuda`` keeps everything on the NVIDIA GPU, each op launched in place on
torch's stream for the GPU's architecture (sm90 on an H100/H200), ``--device xpu`` on an
Intel GPU.

Example (three steps in the interpreter, a tiny model; then 200 steps on an NVIDIA GPU)::

    python examples/train_gpt.py --steps 3 --target interpret --d-model 128 --layers 1 --context 32 --batch 2
    python examples/train_gpt.py --device cuda --plot loss.png
"""
from __future__ import annotations

import argparse
import math
import sys
import time

TEXT = (
    "When in the Course of human events, it becomes necessary for one people to dissolve the political bands "
    "which have connected them with another, and to assume among the powers of the earth, the separate and equal "
    "station to which the Laws of Nature and of Nature's God entitle them, a decent respect to the opinions of "
    "mankind requires that they should declare the causes which impel them to the separation. We hold these "
    "truths to be self-evident, that all men are created equal, that they are endowed by their Creator with "
    "certain unalienable Rights, that among these are Life, Liberty and the pursuit of Happiness. That to secure "
    "these rights, Governments are instituted among Men, deriving their just powers from the consent of the "
    "governed."
)
VOCAB = 256
HEADS = 4


def init_params(torch, d_model: int, layers: int, context: int, seed: int = 0, device: str = "cpu") -> dict:
    """The model's f32 weights by name on ``device`` (GPT-2's init: N(0, 0.02), the residual
    projections scaled by 1 / sqrt(2 layers), layer norms 1 and 0, biases 0; drawn on the
    CPU, so every device starts from the same weights)."""
    g = torch.Generator().manual_seed(seed)

    def normal(*shape, std=0.02):
        return torch.randn(shape, generator=g) * std

    head_dim(d_model)
    inner, hidden = d_model, 4 * d_model
    p = {"wte": normal(VOCAB, d_model), "wpe": normal(context, d_model),
         "lnf.w": torch.ones(d_model), "lnf.b": torch.zeros(d_model), "head": normal(VOCAB, d_model)}
    for i in range(layers):
        p |= {f"{i}.ln1.w": torch.ones(d_model), f"{i}.ln1.b": torch.zeros(d_model),
              f"{i}.qkv": normal(3 * inner, d_model), f"{i}.qkv.b": torch.zeros(3 * inner),
              f"{i}.proj": normal(d_model, inner, std=0.02 / math.sqrt(2 * layers)), f"{i}.proj.b": torch.zeros(d_model),
              f"{i}.ln2.w": torch.ones(d_model), f"{i}.ln2.b": torch.zeros(d_model),
              f"{i}.fc": normal(hidden, d_model), f"{i}.fc.b": torch.zeros(hidden),
              f"{i}.out": normal(d_model, hidden, std=0.02 / math.sqrt(2 * layers)), f"{i}.out.b": torch.zeros(d_model)}
    return {name: t.to(device).requires_grad_() for name, t in p.items()}


def head_dim(d_model: int) -> int:
    """The width of each of the HEADS heads, d_model / HEADS, checked against the head
    dimensions the attention kernels take (``xetile_dsl.ops.attention.HEAD_DIMS``).

    >>> head_dim(128)
    32
    """
    from xetile_dsl.ops.attention import HEAD_DIMS

    if d_model % HEADS or d_model // HEADS not in HEAD_DIMS:
        legal = ", ".join(str(HEADS * d) for d in HEAD_DIMS)
        raise ValueError(f"d_model {d_model} gives {HEADS} heads of {d_model / HEADS:g}; the attention "
                         f"kernels take head dims {HEAD_DIMS}, so d_model must be one of {legal}")
    return d_model // HEADS


class XetileOps:
    """The model's ops as ``torch.ops.xetile`` (on ``target``; None: the default device)."""

    def __init__(self, torch, target=None):
        from xetile_dsl.ops import torch_ops

        torch_ops.register()
        self.torch, self.xetile, self.target = torch, torch.ops.xetile, target
        self.half, self.wide = torch.float16, torch.float32

    def linear(self, x, w, b, activation=None, out_dtype=None):
        """act(x @ w^T + b), w stored [out, in]."""
        return self.xetile.matmul(x, w, trans_b=True, bias=b, activation=activation, out_dtype=out_dtype,
                                  target=self.target)

    def layer_norm(self, x, w, b):
        return self.xetile.layer_norm(x, w, b, 1e-5, target=self.target)

    def attention(self, q, k, v):
        return self.xetile.attention(q, k, v, causal=True, target=self.target)

    def cross_entropy(self, logits, targets):
        return self.xetile.cross_entropy(logits, targets, target=self.target)


class TorchOps:
    """The same ops in torch, rounding where the xetile ones round: operands in ``half``,
    products accumulated in ``wide`` (f32 for f16; float64 everywhere for a reference)."""

    def __init__(self, torch, half=None, wide=None):
        self.torch, self.F = torch, torch.nn.functional
        self.half, self.wide = half or torch.float16, wide or torch.float32

    def linear(self, x, w, b, activation=None, out_dtype=None):
        y = self.torch.addmm(b.to(self.wide), x.to(self.wide), w.to(self.wide).T)
        y = self.F.gelu(y) if activation == "gelu" else y
        return y.to(out_dtype or self.half)

    def layer_norm(self, x, w, b):
        return self.F.layer_norm(x, x.shape[-1:], w, b, 1e-5)

    def attention(self, q, k, v):
        q, k, v = (t.to(self.wide) for t in (q, k, v))
        return self.F.scaled_dot_product_attention(q, k, v, is_causal=True).to(self.half)

    def cross_entropy(self, logits, targets):
        return self.F.cross_entropy(logits.to(self.wide), targets)


def gpt_loss(params: dict, idx, targets, ops, layers: int):
    """Mean cross entropy of the next byte: idx, targets int64 [B, T]."""
    B, T = idx.shape
    half, wide = ops.half, ops.wide
    d = head_dim(params["wte"].shape[1])
    x = (params["wte"][idx] + params["wpe"][:T]).reshape(B * T, -1).to(wide)   # the residual stream
    for i in range(layers):
        h = ops.layer_norm(x, params[f"{i}.ln1.w"], params[f"{i}.ln1.b"]).to(half)
        qkv = ops.linear(h, params[f"{i}.qkv"].to(half), params[f"{i}.qkv.b"])
        q, k, v = (t.contiguous() for t in qkv.view(B, T, 3, HEADS, d).permute(2, 0, 3, 1, 4).unbind(0))
        o = ops.attention(q, k, v).transpose(1, 2).reshape(B * T, HEADS * d)
        x = x + ops.linear(o, params[f"{i}.proj"].to(half), params[f"{i}.proj.b"], out_dtype=wide)
        h = ops.layer_norm(x, params[f"{i}.ln2.w"], params[f"{i}.ln2.b"]).to(half)
        u = ops.linear(h, params[f"{i}.fc"].to(half), params[f"{i}.fc.b"], activation="gelu")
        x = x + ops.linear(u, params[f"{i}.out"].to(half), params[f"{i}.out.b"], out_dtype=wide)
    h = ops.layer_norm(x, params["lnf.w"], params["lnf.b"]).to(half)
    zeros = params["lnf.b"].new_zeros(VOCAB)
    logits = ops.linear(h, params["head"].to(half), zeros, out_dtype=wide)
    return ops.cross_entropy(logits, targets.reshape(-1))


def batches(torch, steps: int, batch: int, context: int, seed: int = 1, device: str = "cpu"):
    """``steps`` (idx, targets) pairs of random windows of TEXT's bytes on ``device`` (the
    same for every run with the same seed)."""
    data = torch.tensor(list(TEXT.encode()), dtype=torch.int64)
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        start = torch.randint(0, len(data) - context - 1, (batch,), generator=g)
        window = torch.stack([data[s:s + context + 1] for s in start.tolist()])
        out.append((window[:, :-1].to(device), window[:, 1:].to(device)))
    return out


def train(torch, ops, params: dict, data, layers: int, lr: float = 3e-3, label: str = "", quiet: bool = False):
    """AdamW over ``data``; returns the loss of every step (a progress bar on stderr)."""
    opt = torch.optim.AdamW(params.values(), lr=lr, weight_decay=0.01)
    losses, start = [], time.monotonic()
    for step, (idx, targets) in enumerate(data, 1):
        opt.zero_grad()
        loss = gpt_loss(params, idx, targets, ops, layers)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if not quiet:
            progress(step, len(data), losses[-1], time.monotonic() - start, label)
    return losses


def progress(step: int, steps: int, loss: float, seconds: float, label: str, width: int = 30) -> None:
    done = width * step // steps
    end = "\n" if step == steps else ""
    print(f"\r{label} [{'#' * done}{'.' * (width - done)}] {step}/{steps} loss {loss:.4f} "
          f"{seconds / step:.2f} s/step", end=end, file=sys.stderr, flush=True)


def copy_params(params: dict) -> dict:
    return {name: t.detach().clone().requires_grad_() for name, t in params.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--target", default=None, help="xetile target (default: the default device)")
    parser.add_argument("--device", default="cpu", help="torch device of the weights and batches (cpu, cuda, xpu)")
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--plot", metavar="FILE.png", help="also train with torch's ops; both loss curves to FILE")
    args = parser.parse_args(argv)
    try:
        head_dim(args.d_model)
    except ValueError as e:
        parser.error(str(e))
    try:
        import torch  # optional dependency of xetile_dsl
    except ImportError:
        print("train_gpt.py needs PyTorch (pip install torch)", file=sys.stderr)
        return 1
    plt = None
    if args.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print(f"--plot {args.plot}: matplotlib is not installed (pip install matplotlib); "
                  f"printing the two loss curves instead", file=sys.stderr)
    params = init_params(torch, args.d_model, args.layers, args.context, device=args.device)
    start = copy_params(params)
    data = batches(torch, args.steps, args.batch, args.context, device=args.device)
    label = f"xetile {args.target or ('default' if args.device == 'cpu' else args.device)}"
    losses = train(torch, XetileOps(torch, args.target), params, data, args.layers, args.lr, label)
    print(f"{label}: loss {losses[0]:.4f} -> {losses[-1]:.4f} over {args.steps} steps "
          f"(d_model {args.d_model}, {args.layers} layers, context {args.context}, batch {args.batch})")
    if not args.plot:
        return 0
    eager = train(torch, TorchOps(torch), start, data, args.layers, args.lr, "torch eager")
    print(f"torch eager: loss {eager[0]:.4f} -> {eager[-1]:.4f}")
    if plt is None:
        every = max(1, args.steps // 20)
        print("step  xetile   torch")
        for i in range(0, args.steps, every):
            print(f"{i + 1:4d}  {losses[i]:.4f}  {eager[i]:.4f}")
        return 0
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(range(1, args.steps + 1), losses, label=label)
    ax.plot(range(1, args.steps + 1), eager, label="torch eager", linestyle="--")
    ax.set(xlabel="step", ylabel="cross entropy (nats / byte)", title="train_gpt.py")
    ax.legend()
    fig.savefig(args.plot, dpi=120, bbox_inches="tight")
    print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
