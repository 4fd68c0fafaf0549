"""Gradients of the ``torch.ops.xetile`` custom ops: one table, op name -> :class:`Rule`.

:func:`register` (called by ``torch_ops.register()``) hands each rule to
``torch.library.register_autograd``: ``setup_context(ctx, inputs, output)`` saves what
the backward needs, ``backward(ctx, *grads)`` returns one gradient per input of the op's
schema (None where there is none) by calling the op's backward, itself a custom op
(``torch.ops.xetile.matmul_backward``), so that ``torch.compile`` keeps one node for the
forward and one for the backward instead of tracing into either.

Adding an op's gradient is one entry in :data:`RULES` (and its backward op in
``torch_ops.SCHEMAS``), as softmax's (below, in short)::

    def _softmax_setup(ctx, inputs, output):
        ctx.save_for_backward(output)
        ctx.dim, ctx.target = inputs[1], inputs[2]

    def _softmax_backward(ctx, dy):
        (y,) = ctx.saved_tensors
        return _ops().softmax_backward(y, dy, ctx.dim, ctx.target), None, None

    RULES["softmax"] = Rule(_softmax_setup, _softmax_backward)

An op whose backward needs statistics of its forward (layer_norm's mean and rstd,
attention's lse, cross entropy's lse) has its rule on the op returning them
(``layer_norm_with_stats -> (y, mean, rstd)``, ``attention_lse``, ``rms_norm_with_stats``,
``cross_entropy_forward``), ``ctx.mark_non_differentiable`` on the statistics; the public
op (``torch.ops.xetile.layer_norm``) is a ``CompositeImplicitAutograd`` op of
:data:`COMPOSITES` returning that op's first result (cross_entropy: the per-row losses
reduced in torch): eager and compiled graphs then hold one ``layer_norm_with_stats`` node
forward and one ``layer_norm_backward`` node backward, and the public op keeps its
one-output schema (docs/decisions/035).

Nothing here imports torch: :func:`register` is given it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import UsageError
from .losses import check_reduction, cross_entropy_result


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


def _softmax_setup(ctx, inputs, output):
    ctx.save_for_backward(output)
    ctx.dim, ctx.target = inputs[1], inputs[2]


def _softmax_backward(ctx, dy):
    (y,) = ctx.saved_tensors
    return _ops().softmax_backward(y, dy.contiguous(), ctx.dim, ctx.target), None, None


def _log_softmax_backward(ctx, dy):
    (y,) = ctx.saved_tensors
    return _ops().log_softmax_backward(y, dy.contiguous(), ctx.dim, ctx.target), None, None


def _layer_norm_setup(ctx, inputs, output):
    x, weight, _bias, _eps, target = inputs
    _, mean, rstd = output
    ctx.mark_non_differentiable(mean, rstd)
    ctx.save_for_backward(x, weight, mean, rstd)
    ctx.target = target


def _layer_norm_backward(ctx, dy, _dmean, _drstd):
    x, weight, mean, rstd = ctx.saved_tensors
    dx, dw, db = _ops().layer_norm_backward(dy.contiguous(), x, weight, mean, rstd, ctx.target)
    needs = ctx.needs_input_grad
    return (dx if needs[0] else None, dw if needs[1] else None, db if needs[2] else None, None, None)


def _rms_norm_setup(ctx, inputs, output):
    x, weight, _eps, target = inputs
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(x, weight, output[1])
    ctx.target = target


def _rms_norm_backward(ctx, dy, _drstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dw = _ops().rms_norm_backward(dy.contiguous(), x, weight, rstd, ctx.target)
    needs = ctx.needs_input_grad
    return dx if needs[0] else None, dw if needs[1] else None, None, None


def _attention_setup(ctx, inputs, output):
    q, k, v, causal, scale, cu_seqlens, _max_seqlen, target = inputs
    if cu_seqlens is not None and any(t.requires_grad for t in (q, k, v)):
        raise UsageError("torch.ops.xetile.attention: no backward for variable-length batches (cu_seqlens) yet; "
                         "pad the sequences to a [Z, H, N, D] batch for training, or run under torch.no_grad()")
    o, lse = output
    ctx.mark_non_differentiable(lse)
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.flags = (causal, scale, target)


def _attention_backward(ctx, do, _dlse):
    q, k, v, o, lse = ctx.saved_tensors
    causal, scale, target = ctx.flags
    dq, dk, dv = _ops().attention_backward(q, k, v, o, do.contiguous(), lse, causal, scale, target)
    needs = ctx.needs_input_grad
    return (dq if needs[0] else None, dk if needs[1] else None, dv if needs[2] else None, None, None, None, None, None)


def _cross_entropy_setup(ctx, inputs, output):
    logits, targets, ignore_index, target = inputs
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(logits, targets, output[1])
    ctx.flags = (ignore_index, target)


def _cross_entropy_backward(ctx, dloss_rows, _dlse):
    logits, targets, lse = ctx.saved_tensors
    ignore_index, target = ctx.flags
    dlogits = _ops().cross_entropy_backward(logits, targets, lse, dloss_rows.float().contiguous(), ignore_index,
                                            target)
    return dlogits, None, None, None


#: op name -> its Rule (ops without one have no gradient: autograd says so when asked); the
#: ops with forward statistics have theirs on the op returning them (``*_with_stats``,
#: ``attention_lse``, ``cross_entropy_forward``), which :data:`COMPOSITES` call
RULES: dict[str, Rule] = {
    "matmul": Rule(_matmul_setup, _matmul_backward),
    "softmax": Rule(_softmax_setup, _softmax_backward),
    "log_softmax": Rule(_softmax_setup, _log_softmax_backward),
    "layer_norm_with_stats": Rule(_layer_norm_setup, _layer_norm_backward),
    "rms_norm_with_stats": Rule(_rms_norm_setup, _rms_norm_backward),
    "attention_lse": Rule(_attention_setup, _attention_backward),
    "cross_entropy_forward": Rule(_cross_entropy_setup, _cross_entropy_backward),
}


def _layer_norm(x, weight, bias, eps=1e-5, target=None):
    return _ops().layer_norm_with_stats(x, weight, bias, eps, target)[0]


def _rms_norm(x, weight, eps=1e-6, target=None):
    return _ops().rms_norm_with_stats(x, weight, eps, target)[0]


def _attention(q, k, v, causal=False, scale=None, cu_seqlens=None, max_seqlen=None, target=None):
    return _ops().attention_lse(q, k, v, causal, scale, cu_seqlens, max_seqlen, target)[0]


def _cross_entropy(logits, targets, reduction="mean", ignore_index=-100, target=None):
    """torch's reductions of the per-row losses (``ops.cross_entropy``'s): ``mean`` over the
    rows whose target is not ``ignore_index`` (NaN when none is), in f32."""
    check_reduction(reduction)
    cross_entropy_result(logits, targets)   # refusals name cross_entropy, not the op it calls
    loss_rows = _ops().cross_entropy_forward(logits, targets, ignore_index, target)[0]
    if reduction == "none":
        return loss_rows.reshape(targets.shape)
    if reduction == "sum":
        return loss_rows.sum()
    return loss_rows.sum() / (targets != ignore_index).sum()


#: public op name -> its ``CompositeImplicitAutograd`` implementation over the op carrying
#: the rule (the schema is ``torch_ops.SCHEMAS``'): the forward graph holds that op's node,
#: the backward graph its backward's
COMPOSITES: dict[str, Callable] = {
    "layer_norm": _layer_norm,
    "rms_norm": _rms_norm,
    "attention": _attention,
    "cross_entropy": _cross_entropy,
}


_LIBRARY: list = []   # the torch.library.Library defining COMPOSITES (kept alive: it owns them)


def register(torch, schemas: dict[str, str]) -> None:
    """Define the :data:`COMPOSITES` (their schemas from ``schemas``) and
    ``torch.library.register_autograd`` every rule (``torch_ops.register()`` calls it
    once, after defining the custom ops)."""
    library = torch.library.Library("xetile", "FRAGMENT")
    for name, fn in COMPOSITES.items():
        library.define(name + schemas[name])
        library.impl(name, fn, "CompositeImplicitAutograd")
    _LIBRARY.append(library)
    for name, rule in RULES.items():
        torch.library.register_autograd(f"xetile::{name}", rule.backward, setup_context=rule.setup_context)
