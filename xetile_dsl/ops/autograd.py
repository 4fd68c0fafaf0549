"""Gradients of the ``torch.ops.xetile`` custom ops: one table, op name -> :class:`Rule`.

:func:`register` (called by ``torch_ops.register()``) hands each rule to
``torch.library.register_autograd``: ``setup_context(ctx, inputs, output)`` saves what
the backward needs, ``backward(ctx, *grads)`` returns one gradient per input of the op's
schema (None where there is none) by calling the op's backward, itself a custom op
(``torch.ops.xetile.matmul_backward``), so that ``torch.compile`` keeps one node for the
forward and one for the backward instead of tracing into either.

Adding an op's gradient is one entry in :data:`RULES` (and its backward op in
``torch_ops.SCHEMAS``)::

    def _softmax_setup(ctx, inputs, output):
        ctx.save_for_backward(output)
        ctx.dim, ctx.target = inputs[1], inputs[2]

    def _softmax_backward(ctx, dy):
        (y,) = ctx.saved_tensors
        return _ops().softmax_backward(y, dy, ctx.dim, ctx.target), None, None

    RULES["softmax"] = Rule(_softmax_setup, _softmax_backward)

An op whose backward needs statistics of its forward (layer_norm's mean and rstd,
attention's lse) gets a forward op returning them, ``xetile::layer_norm_fwd -> (y, mean,
rstd)``, and the rule on that op (``ctx.mark_non_differentiable`` on the statistics);
``torch.ops.xetile.layer_norm`` becomes a ``CompositeImplicitAutograd`` op (``Library.define``
and ``impl``) returning ``layer_norm_fwd(...)[0]``: eager and compiled graphs then hold
one ``layer_norm_fwd`` node forward and one ``layer_norm_backward`` node backward, and the
public op keeps its one-output schema.

Nothing here imports torch: :func:`register` is given it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Rule:
    """How autograd differentiates one op: ``setup_context(ctx, inputs, output)`` (inputs:
    the schema's arguments in order, defaults filled in) and ``backward(ctx, *grads)``."""

    setup_context: Callable
    backward: Callable


def _ops():
    import torch  # optional dependency: only reached from a registered op's backward
    return torch.ops.xetile


def _matmul_setup(ctx, inputs, output):
    a, b, trans_a, trans_b, bias, activation, _out_dtype, target = inputs
    ctx.save_for_backward(a, b, bias)
    ctx.flags = (trans_a, trans_b, activation, target)


def _matmul_backward(ctx, dc):
    a, b, bias = ctx.saved_tensors
    trans_a, trans_b, activation, target = ctx.flags
    needs_da, needs_db = ctx.needs_input_grad[:2]
    da, db, dbias = _ops().matmul_backward(a, b, dc.contiguous(), trans_a, trans_b, bias, activation,
                                           needs_da, needs_db, target)
    return (da if needs_da else None, db if needs_db else None, None, None,
            dbias if ctx.needs_input_grad[4] else None, None, None, None)


#: op name -> its Rule (ops without one have no gradient: autograd says so when asked)
RULES: dict[str, Rule] = {
    "matmul": Rule(_matmul_setup, _matmul_backward),
}


def register(torch) -> None:
    """``torch.library.register_autograd`` for every rule (``torch_ops.register()`` calls
    it once, after defining the ops)."""
    for name, rule in RULES.items():
        torch.library.register_autograd(f"xetile::{name}", rule.backward, setup_context=rule.setup_context)
