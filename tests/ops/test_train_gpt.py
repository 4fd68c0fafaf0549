"""examples/train_gpt.py: one training step through ``torch.ops.xetile`` on the CPU device
(the default target here) against torch eager, and the loss going down over 20 steps;
a tiny model (d_model 128, one layer of 4 heads of 32, context 32, batch 2) so the
kernels build once and each step is a fraction of a second.

The gradient bound: the model rounds to f16 at the same places in both runs (operands of
every matmul and of attention, P in attention), so its gradient's distance from the
float64 model's is set by f16's 2^-11 relative rounding times how much the network
amplifies it.  torch eager doing the same roundings (TorchOps: f16 operands, f32
accumulation) measures that amplification for these weights and data: the xetile
gradient of every parameter must be within 4 times torch eager's largest error from the
f64 gradient, plus f16's half ulp of that gradient's largest element (an element whose
torch error happens to be tiny).  Torch's and our kernels sum in different orders, so
neither error is a multiple of the other; 4 leaves room for that."""
from __future__ import annotations

import pathlib
import re
import shlex
import runpy

import pytest

from conftest_tools import require_torch

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_gpt.py"
TINY = {"d_model": 128, "layers": 1, "context": 32}
LR = 3e-3
HALF_ULP_F16 = 2.0 ** -11


@pytest.fixture(scope="module")
def gpt():
    return runpy.run_path(str(EXAMPLE), run_name="train_gpt")


@pytest.fixture(scope="module")
def torch():
    return require_torch()


def _step(torch, gpt, ops, params, data):
    """Forward, backward and one AdamW step; (loss, gradients, parameters after)."""
    opt = torch.optim.AdamW(params.values(), lr=LR, weight_decay=0.01)
    (idx, targets), = data
    loss = gpt["gpt_loss"](params, idx, targets, ops, TINY["layers"])
    loss.backward()
    grads = {n: t.grad.detach().double().clone() for n, t in params.items()}
    opt.step()
    return loss.item(), grads, {n: t.detach().double() for n, t in params.items()}


def test_one_training_step_matches_torch_eager(torch, gpt):
    """The CPU device (every op's forward and backward kernel) against torch eager in f16
    and float64 from the same weights and batch: the loss, every parameter's gradient
    (the module docstring's bound), and the parameters after AdamW's step: where the f64
    gradient is larger than the bound its sign is ours, so the step (lr times the sign on
    a first step) is the same up to f32 rounding; elsewhere at most 2 lr apart."""
    init = gpt["init_params"](torch, TINY["d_model"], TINY["layers"], TINY["context"])
    data = gpt["batches"](torch, 1, 2, TINY["context"])
    ours = _step(torch, gpt, gpt["XetileOps"](torch), gpt["copy_params"](init), data)
    eager = _step(torch, gpt, gpt["TorchOps"](torch), gpt["copy_params"](init), data)
    f64 = {n: t.detach().double().requires_grad_() for n, t in init.items()}
    exact = _step(torch, gpt, gpt["TorchOps"](torch, torch.float64, torch.float64), f64, data)
    assert abs(ours[0] - exact[0]) <= 4 * abs(eager[0] - exact[0]) + HALF_ULP_F16 * abs(exact[0])
    for name, g64 in exact[1].items():
        g, gt = ours[1][name], eager[1][name]
        bound = 4 * (gt - g64).abs().max().item() + HALF_ULP_F16 * g64.abs().max().item()
        err = (g - g64).abs().max().item()
        assert err <= bound, f"d{name}: {err:.3e} > {bound:.3e} (torch eager f16: {(gt - g64).abs().max():.3e})"
        step_diff = (ours[2][name] - exact[2][name]).abs()
        sure = g64.abs() > bound
        assert (step_diff[sure] <= 1e-3 * LR + 2.0 ** -22 * exact[2][name].abs()[sure]).all(), name
        assert (step_diff <= 2 * LR + 2.0 ** -22 * exact[2][name].abs()).all(), name


def test_loss_decreases_over_20_steps(torch, gpt):
    """The example's own training loop on the CPU device: the byte-level loss starts near
    log(256) = 5.55 (uniform predictions of the small initial weights) and falls by
    more than a third in 20 AdamW steps (5.55 -> 2.9 here; torch eager follows the same
    curve)."""
    init = gpt["init_params"](torch, TINY["d_model"], TINY["layers"], TINY["context"])
    data = gpt["batches"](torch, 20, 2, TINY["context"])
    losses = gpt["train"](torch, gpt["XetileOps"](torch), init, data, TINY["layers"], LR, quiet=True)
    assert abs(losses[0] - 5.545) < 0.05 and losses[-1] < losses[0] * 2 / 3, losses


def test_the_readme_command_runs_as_pasted(torch, gpt, capsys):
    """README's train_gpt.py command (the tiny configuration of the tests above: its
    kernels are built), run as the script runs it, prints the loss going down."""
    readme = (EXAMPLE.parents[1] / "README.md").read_text(encoding="utf-8")
    (command,) = [line for line in readme.splitlines() if line.startswith("python examples/train_gpt.py")]
    args = shlex.split(command)[2:]
    assert gpt["main"](args) == 0
    first, last = map(float, re.search(r"loss (\S+) -> (\S+) over", capsys.readouterr().out).groups())
    assert last < first
