"""The ops as ``torch.library`` custom operators (``torch.ops.xetile.*``), so that
``torch.compile`` graphs keep each as one node instead of tracing into it, with their
gradients (``ops/autograd.py``: ``loss.backward()`` runs each op's backward op).

Nothing here runs at import.  :func:`register` needs torch >= 2.4
(``torch.library.custom_op``) but no XPU device: registering only tells the dispatcher
the schema, the kernel and the fake implementation.  The kernel runs the op on XPU
tensors (an Intel GPU) in place, on their queue; on CPU tensors it runs as on numpy
arrays (views of the tensors' memory, copied in and out by the launcher, on the default
device or ``target=``: the CPU device where there is no GPU, the interpreter with
``target="interpret"``) and returns CPU tensors.  Tensors on any other device, or CPU
and XPU tensors mixed, get a UsageError (not torch's "no kernel for this backend").  The
fake implementation gives the output's shape and dtype for tracing (and for meta tensors)
from the op's own ``*_result`` function, which checks the arguments as the op does.
``layer_norm``, ``rms_norm``, ``attention`` and ``cross_entropy`` are no custom ops but
composites (ops/autograd.py ``COMPOSITES``) of the op returning their statistics, which
carries the gradient: they have that op's kernel and fake.

The schemas are written out rather than inferred from annotations: this module needs no
torch at import, and each op's keyword arguments match the numpy entry point's (except
``out=``, a mutation: a functional op returns its result)."""
from __future__ import annotations

import numpy as np

from ..errors import UsageError
from . import autograd, llm, losses as ce, operands, rows, rows_backward
from .attention import attention, attention_result
from .attention_backward import attention_backward
from .decode_attention import decode_attention, decode_attention_result
from .matmul import matmul, matmul_result
from .matmul_backward import _bias_grad_dtype, matmul_backward, matmul_backward_check
from .matmul_wq import matmul_wq, matmul_wq_result

#: op name -> its schema (arguments and defaults as in xetile_dsl.ops; none keyword-only, since
#: custom ops refuse keyword-only tensors such as matmul's ``bias``)
SCHEMAS = {
    "matmul": "(Tensor a, Tensor b, bool trans_a=False, bool trans_b=False, Tensor? bias=None, "
              "str? activation=None, ScalarType? out_dtype=None, str? target=None) -> Tensor",
    "matmul_backward": "(Tensor a, Tensor b, Tensor dc, bool trans_a=False, bool trans_b=False, Tensor? bias=None, "
                       "str? activation=None, bool needs_da=True, bool needs_db=True, str? target=None) "
                       "-> (Tensor, Tensor, Tensor)",
    "softmax": "(Tensor x, int dim=-1, str? target=None) -> Tensor",
    "layer_norm": "(Tensor x, Tensor weight, Tensor bias, float eps=1e-05, str? target=None) -> Tensor",
    "rms_norm": "(Tensor x, Tensor weight, float eps=1e-06, str? target=None) -> Tensor",
    "attention": "(Tensor q, Tensor k, Tensor v, bool causal=False, float? scale=None, Tensor? cu_seqlens=None, "
                 "int? max_seqlen=None, str? target=None) -> Tensor",
    "attention_lse": "(Tensor q, Tensor k, Tensor v, bool causal=False, float? scale=None, Tensor? cu_seqlens=None, "
                     "int? max_seqlen=None, str? target=None) -> (Tensor, Tensor)",
    "attention_backward": "(Tensor q, Tensor k, Tensor v, Tensor o, Tensor do, Tensor lse, bool causal=False, "
                          "float? scale=None, str? target=None) -> (Tensor, Tensor, Tensor)",
    "decode_attention": "(Tensor q, Tensor k_cache, Tensor v_cache, Tensor block_table, Tensor seq_lens, "
                        "float? scale=None, int? num_splits=None, str? target=None) -> Tensor",
    "matmul_wq": "(Tensor x, Tensor w_packed, Tensor scales, Tensor? zeros=None, int bits=4, int group_size=128, "
                 "str? target=None, str format='int') -> Tensor",
    "rope": "(Tensor(a!) q, Tensor(b!) k, Tensor positions, float theta=10000.0, str style='neox', "
            "int? rotary_dim=None, str? target=None) -> ()",
    "silu_mul": "(Tensor x, str? target=None) -> Tensor",
    "add_rms_norm": "(Tensor x, Tensor(a!) residual, Tensor weight, float eps=1e-06, str? target=None) -> Tensor",
    "log_softmax": "(Tensor x, int dim=-1, str? target=None) -> Tensor",
    "softmax_backward": "(Tensor y, Tensor dy, int dim=-1, str? target=None) -> Tensor",
    "log_softmax_backward": "(Tensor y, Tensor dy, int dim=-1, str? target=None) -> Tensor",
    "layer_norm_backward": "(Tensor dy, Tensor x, Tensor weight, Tensor mean, Tensor rstd, str? target=None) "
                           "-> (Tensor, Tensor, Tensor)",
    "rms_norm_backward": "(Tensor dy, Tensor x, Tensor weight, Tensor rstd, str? target=None) -> (Tensor, Tensor)",
    "cross_entropy": "(Tensor logits, Tensor targets, str reduction='mean', int ignore_index=-100, "
                     "str? target=None) -> Tensor",
    "cross_entropy_forward": "(Tensor logits, Tensor targets, int ignore_index=-100, str? target=None) "
                             "-> (Tensor, Tensor)",
    "cross_entropy_backward": "(Tensor logits, Tensor targets, Tensor lse, Tensor dloss_rows, int ignore_index=-100, "
                              "str? target=None) -> Tensor",
    # ops.layer_norm / ops.rms_norm with return_stats=True (a schema has one return arity)
    "layer_norm_with_stats": "(Tensor x, Tensor weight, Tensor bias, float eps=1e-05, str? target=None) "
                             "-> (Tensor, Tensor, Tensor)",
    "rms_norm_with_stats": "(Tensor x, Tensor weight, float eps=1e-06, str? target=None) -> (Tensor, Tensor)",
}

#: op name -> the arguments it writes in place (the schemas' ``(a!)``): ``rope`` rotates q
#: and k and returns nothing (a custom op may not return its inputs), ``add_rms_norm``
#: returns y and leaves ``x + residual`` in residual
MUTATES = {"rope": ("q", "k"), "add_rms_norm": ("residual",)}

#: torch-only names: the numpy entry point and the flag each one stands for
WITH_FLAG = {"layer_norm_with_stats": ("layer_norm", "return_stats"), "rms_norm_with_stats": ("rms_norm", "return_stats"),
             "attention_lse": ("attention", "return_lse")}

_REGISTERED: dict[str, object] = {}


def register() -> dict[str, object]:
    """Register every op of ``SCHEMAS`` as ``torch.ops.xetile.<name>``, with the gradients
    of ``autograd.RULES`` (once; later calls return the same); returns the ops by name
    (custom ops; ``autograd.COMPOSITES``, e.g. layer_norm over layer_norm_with_stats, as
    ``torch.ops`` packets).  A UsageError without torch >= 2.4."""
    if _REGISTERED:
        return _REGISTERED
    torch = _torch()
    for name, schema in SCHEMAS.items():
        if name in autograd.COMPOSITES:
            continue
        kernel, fake = _IMPLEMENTATIONS[name]
        op = torch.library.custom_op(f"xetile::{name}", kernel, mutates_args=MUTATES.get(name, ()), schema=schema)
        op.register_fake(fake)
        _REGISTERED[name] = op
    autograd.register(torch, SCHEMAS)
    # the composites (layer_norm over layer_norm_with_stats, ...): torch.ops packets
    _REGISTERED.update({name: getattr(torch.ops.xetile, name) for name in autograd.COMPOSITES})
    return _REGISTERED


def _torch():
    """torch, if it has ``torch.library.custom_op``; else a UsageError naming what is missing."""
    try:
        import torch  # optional dependency
    except ImportError:
        raise UsageError("xetile_dsl.ops.torch_ops.register() needs PyTorch >= 2.4 (to run the ops, its XPU "
                         "build: pip install torch --index-url https://download.pytorch.org/whl/xpu)") from None
    if not hasattr(torch.library, "custom_op"):
        raise UsageError(f"torch {torch.__version__} has no torch.library.custom_op: torch >= 2.4 is needed")
    return torch


def _host_arrays(op: str, **tensors) -> dict:
    """The tensors as the op's entry point takes them: XPU tensors as they are (zero-copy
    on their queue), CPU tensors as numpy views of their memory (the launcher copies them
    in and out, as for numpy arrays), None as None; a UsageError for any other device or
    for tensors of different devices mixed.  CUDA tensors are used in place too: the ops
    launch them on the NVIDIA backend."""
    devices = {t.device.type for t in tensors.values() if t is not None}
    for name, tensor in tensors.items():
        if tensor is not None and tensor.device.type not in ("xpu", "cpu", "cuda"):   # cuda: the NVIDIA backend
            raise UsageError(f"torch.ops.xetile.{op}: {name} is a tensor on device {str(tensor.device)!r}; the xetile "
                             f"ops run on XPU and CUDA tensors (used in place) and CPU tensors (copied to the "
                             f"default device or target=, e.g. the CPU device): move it with .to('xpu') or .cpu()")
    if len(devices) > 1:
        raise UsageError(f"torch.ops.xetile.{op}: the tensors are on {' and '.join(map(repr, sorted(devices)))} mixed; "
                         f"pass them all on one "
                         f"device ({', '.join(f'{n}: {t.device}' for n, t in tensors.items() if t is not None)})")
    return {name: _numpy_view(t) if t is not None and t.device.type == "cpu" else t for name, t in tensors.items()}


def _numpy_view(tensor):
    """A numpy view of a CPU tensor's memory (bfloat16 through its bits)."""
    import torch  # optional dependency: only reached with a torch tensor in hand

    tensor = tensor.detach()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(operands.BF16)
    fp8 = str(tensor.dtype).removeprefix("torch.")
    if fp8 in operands.TORCH_FP8:             # fp8 (KV caches): the bytes as ml_dtypes' type
        return tensor.view(torch.uint8).numpy().view(operands.TORCH_FP8[fp8])
    return tensor.numpy()


def _as_tensor(result):
    """The op's result as torch tensors: numpy arrays become CPU tensors sharing their
    memory (bfloat16 through its bits), tensors and None stay, tuples element-wise."""
    if isinstance(result, tuple):
        return tuple(_as_tensor(r) for r in result)
    if isinstance(result, np.ndarray):
        import torch  # optional dependency: only reached with a torch tensor in hand

        if result.dtype == operands.BF16:
            return torch.from_numpy(result.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(result)
    return result


# --- kernels (XPU and CPU tensors) and fakes (shape and dtype) ---------------------------

def _matmul_kernel(a, b, trans_a=False, trans_b=False, bias=None, activation=None, out_dtype=None, target=None):
    t = _host_arrays("matmul", a=a, b=b, bias=bias)
    return _as_tensor(matmul(t["a"], t["b"], trans_a=trans_a, trans_b=trans_b, bias=t["bias"],
                             activation=activation, out_dtype=out_dtype, target=target))


def _matmul_fake(a, b, trans_a=False, trans_b=False, bias=None, activation=None, out_dtype=None, target=None):
    shape, dtype = matmul_result(a, b, trans_a=trans_a, trans_b=trans_b, bias=bias,
                                 activation=activation, out_dtype=out_dtype)
    return operands.empty_like_input(a, shape, dtype)


def _matmul_backward_kernel(a, b, dc, trans_a=False, trans_b=False, bias=None, activation=None, needs_da=True,
                            needs_db=True, target=None):
    t = _host_arrays("matmul_backward", a=a, b=b, dc=dc, bias=bias)
    grads = _as_tensor(matmul_backward(t["a"], t["b"], t["dc"], trans_a=trans_a, trans_b=trans_b, bias=t["bias"],
                                       activation=activation, needs_da=needs_da, needs_db=needs_db, target=target))
    # a gradient not asked for (or no bias): an empty tensor (a custom op returns tensors)
    return tuple(g if g is not None else a.new_empty((0,), dtype=_torch().float32) for g in grads)


def _matmul_backward_fake(a, b, dc, trans_a=False, trans_b=False, bias=None, activation=None, needs_da=True,
                          needs_db=True, target=None):
    _, dtype = matmul_backward_check(a, b, dc, trans_a, trans_b, bias, activation)
    empty = operands.empty_like_input(a, (0,), np.float32)
    return (operands.empty_like_input(a, tuple(a.shape), dtype) if needs_da else empty,
            operands.empty_like_input(a, tuple(b.shape), dtype) if needs_db else empty,
            empty if bias is None else operands.empty_like_input(a, tuple(bias.shape), _bias_grad_dtype(bias)))


def _softmax_kernel(x, dim=-1, target=None):
    x = _host_arrays("softmax", x=x)["x"]
    return _as_tensor(rows.softmax(x, dim, target=target))


def _softmax_fake(x, dim=-1, target=None):
    return operands.empty_like_input(x, *rows.softmax_result(x, dim))


def _attention_lse_kernel(q, k, v, causal=False, scale=None, cu_seqlens=None, max_seqlen=None, target=None):
    """ops.attention(..., return_lse=True): (o, lse) (a schema returns one fixed tuple, so
    the lse form is an op of its own)."""
    t = _host_arrays("attention_lse", q=q, k=k, v=v, cu_seqlens=cu_seqlens)
    q, k, v = t["q"], t["k"], t["v"]
    return _as_tensor(attention(q, k, v, causal=causal, scale=scale, cu_seqlens=t["cu_seqlens"],
                                max_seqlen=max_seqlen, return_lse=True, target=target))


def _attention_lse_fake(q, k, v, causal=False, scale=None, cu_seqlens=None, max_seqlen=None, target=None):
    shape, dtype = attention_result(q, k, v, cu_seqlens)
    lse = (shape[1], shape[0]) if cu_seqlens is not None else shape[:-1]     # varlen: [H, total]
    return operands.empty_like_input(q, shape, dtype), operands.empty_like_input(q, lse, np.float32)


def _attention_backward_kernel(q, k, v, o, do, lse, causal=False, scale=None, target=None):
    t = _host_arrays("attention_backward", q=q, k=k, v=v, o=o, do=do, lse=lse)
    q, k, v, o, do, lse = t["q"], t["k"], t["v"], t["o"], t["do"], t["lse"]
    return _as_tensor(attention_backward(q, k, v, o, do, lse, causal=causal, scale=scale, target=target))


def _attention_backward_fake(q, k, v, o, do, lse, causal=False, scale=None, target=None):
    _, dtype = attention_result(q, k, v)
    return tuple(operands.empty_like_input(q, tuple(x.shape), dtype) for x in (q, k, v))
def _decode_attention_kernel(q, k_cache, v_cache, block_table, seq_lens, scale=None, num_splits=None, target=None):
    t = _host_arrays("decode_attention", q=q, k_cache=k_cache, v_cache=v_cache, block_table=block_table,
                     seq_lens=seq_lens)
    return _as_tensor(decode_attention(t["q"], t["k_cache"], t["v_cache"], t["block_table"], t["seq_lens"],
                                       scale=scale, num_splits=num_splits, target=target))


def _decode_attention_fake(q, k_cache, v_cache, block_table, seq_lens, scale=None, num_splits=None, target=None):
    return operands.empty_like_input(q, *decode_attention_result(q, k_cache, v_cache, block_table, seq_lens))


def _matmul_wq_kernel(x, w_packed, scales, zeros=None, bits=4, group_size=128, target=None, format="int"):
    t = _host_arrays("matmul_wq", x=x, w_packed=w_packed, scales=scales, zeros=zeros)
    return _as_tensor(matmul_wq(t["x"], t["w_packed"], t["scales"], t["zeros"], bits=bits, group_size=group_size,
                                target=target, format=format))


def _matmul_wq_fake(x, w_packed, scales, zeros=None, bits=4, group_size=128, target=None, format="int"):
    return operands.empty_like_input(x, *matmul_wq_result(x, w_packed, scales, zeros, bits, group_size, format))


def _rope_kernel(q, k, positions, theta=10000.0, style="neox", rotary_dim=None, target=None):
    t = _host_arrays("rope", q=q, k=k, positions=positions)
    llm.rope(t["q"], t["k"], t["positions"], theta, style, rotary_dim, target=target)


def _rope_fake(q, k, positions, theta=10000.0, style="neox", rotary_dim=None, target=None):
    llm.rope_check(q, k, positions, theta, style, rotary_dim)


def _silu_mul_kernel(x, target=None):
    x = _host_arrays("silu_mul", x=x)["x"]
    return _as_tensor(llm.silu_mul(x, target=target))


def _silu_mul_fake(x, target=None):
    return operands.empty_like_input(x, *llm.silu_mul_result(x))


def _add_rms_norm_kernel(x, residual, weight, eps=1e-6, target=None):
    t = _host_arrays("add_rms_norm", x=x, residual=residual, weight=weight)
    return _as_tensor(llm.add_rms_norm(t["x"], t["residual"], t["weight"], eps, target=target)[0])


def _add_rms_norm_fake(x, residual, weight, eps=1e-6, target=None):
    return operands.empty_like_input(x, *llm.add_rms_norm_check(x, residual, weight))
def _log_softmax_kernel(x, dim=-1, target=None):
    t = _host_arrays("log_softmax", x=x)
    x = t["x"]
    return _as_tensor(rows.log_softmax(x, dim, target=target))


def _softmax_backward_kernel(y, dy, dim=-1, target=None):
    t = _host_arrays("softmax_backward", y=y, dy=dy)
    y, dy = t["y"], t["dy"]
    return _as_tensor(rows_backward.softmax_backward(y, dy, dim, target=target))


def _log_softmax_backward_kernel(y, dy, dim=-1, target=None):
    t = _host_arrays("log_softmax_backward", y=y, dy=dy)
    y, dy = t["y"], t["dy"]
    return _as_tensor(rows_backward.log_softmax_backward(y, dy, dim, target=target))


def _softmax_backward_fake(y, dy, dim=-1, target=None):
    return operands.empty_like_input(y, *rows_backward.softmax_backward_result(y, dy, dim))


def _layer_norm_backward_kernel(dy, x, weight, mean, rstd, target=None):
    t = _host_arrays("layer_norm_backward", dy=dy, x=x, weight=weight, mean=mean, rstd=rstd)
    dy, x, weight, mean, rstd = t["dy"], t["x"], t["weight"], t["mean"], t["rstd"]
    return _as_tensor(rows_backward.layer_norm_backward(dy, x, weight, mean, rstd, target=target))


def _layer_norm_backward_fake(dy, x, weight, mean, rstd, target=None):
    shape, dtype, wshape, wdtype = rows_backward.norm_backward_result(dy, x, weight, rms=False)
    return (operands.empty_like_input(x, shape, dtype), operands.empty_like_input(x, wshape, wdtype),
            operands.empty_like_input(x, wshape, wdtype))


def _rms_norm_backward_kernel(dy, x, weight, rstd, target=None):
    t = _host_arrays("rms_norm_backward", dy=dy, x=x, weight=weight, rstd=rstd)
    dy, x, weight, rstd = t["dy"], t["x"], t["weight"], t["rstd"]
    return _as_tensor(rows_backward.rms_norm_backward(dy, x, weight, rstd, target=target))


def _rms_norm_backward_fake(dy, x, weight, rstd, target=None):
    shape, dtype, wshape, wdtype = rows_backward.norm_backward_result(dy, x, weight, rms=True)
    return operands.empty_like_input(x, shape, dtype), operands.empty_like_input(x, wshape, wdtype)


def _cross_entropy_forward_kernel(logits, targets, ignore_index=-100, target=None):
    t = _host_arrays("cross_entropy_forward", logits=logits, targets=targets)
    logits, targets = t["logits"], t["targets"]
    return _as_tensor(ce.cross_entropy_forward(logits, targets, ignore_index, target=target))


def _cross_entropy_forward_fake(logits, targets, ignore_index=-100, target=None):
    rows_, _ = ce.cross_entropy_result(logits, targets, "cross_entropy_forward")
    return operands.empty_like_input(logits, (rows_,), ce.F32), operands.empty_like_input(logits, (rows_,), ce.F32)


def _cross_entropy_backward_kernel(logits, targets, lse, dloss_rows, ignore_index=-100, target=None):
    t = _host_arrays("cross_entropy_backward", logits=logits, targets=targets, lse=lse, dloss_rows=dloss_rows)
    logits, targets, lse, dloss_rows = t["logits"], t["targets"], t["lse"], t["dloss_rows"]
    return _as_tensor(ce.cross_entropy_backward(logits, targets, lse, dloss_rows, ignore_index, target=target))


def _cross_entropy_backward_fake(logits, targets, lse, dloss_rows, ignore_index=-100, target=None):
    _, dtype = ce.cross_entropy_result(logits, targets, "cross_entropy_backward")
    return operands.empty_like_input(logits, tuple(logits.shape), dtype)


def _layer_norm_with_stats_kernel(x, weight, bias, eps=1e-5, target=None):
    t = _host_arrays("layer_norm_with_stats", x=x, weight=weight, bias=bias)
    x, weight, bias = t["x"], t["weight"], t["bias"]
    return _as_tensor(rows.layer_norm(x, weight, bias, eps, return_stats=True, target=target))


def _layer_norm_with_stats_fake(x, weight, bias, eps=1e-5, target=None):
    shape, dtype = rows.norm_result(x, weight, bias, rms=False)
    stat = (int(np.prod(shape[:-1], dtype=np.int64)),)
    return (operands.empty_like_input(x, shape, dtype), operands.empty_like_input(x, stat, np.float32),
            operands.empty_like_input(x, stat, np.float32))


def _rms_norm_with_stats_kernel(x, weight, eps=1e-6, target=None):
    t = _host_arrays("rms_norm_with_stats", x=x, weight=weight)
    x, weight = t["x"], t["weight"]
    return _as_tensor(rows.rms_norm(x, weight, eps, return_stats=True, target=target))


def _rms_norm_with_stats_fake(x, weight, eps=1e-6, target=None):
    shape, dtype = rows.norm_result(x, weight, rms=True)
    stat = (int(np.prod(shape[:-1], dtype=np.int64)),)
    return operands.empty_like_input(x, shape, dtype), operands.empty_like_input(x, stat, np.float32)


_IMPLEMENTATIONS = {
    "matmul": (_matmul_kernel, _matmul_fake),
    "matmul_backward": (_matmul_backward_kernel, _matmul_backward_fake),
    "softmax": (_softmax_kernel, _softmax_fake),
    "attention_lse": (_attention_lse_kernel, _attention_lse_fake),
    "attention_backward": (_attention_backward_kernel, _attention_backward_fake),
    "decode_attention": (_decode_attention_kernel, _decode_attention_fake),
    "matmul_wq": (_matmul_wq_kernel, _matmul_wq_fake),
    "rope": (_rope_kernel, _rope_fake),
    "silu_mul": (_silu_mul_kernel, _silu_mul_fake),
    "add_rms_norm": (_add_rms_norm_kernel, _add_rms_norm_fake),
    "log_softmax": (_log_softmax_kernel, _softmax_fake),
    "softmax_backward": (_softmax_backward_kernel, _softmax_backward_fake),
    "log_softmax_backward": (_log_softmax_backward_kernel, _softmax_backward_fake),
    "layer_norm_backward": (_layer_norm_backward_kernel, _layer_norm_backward_fake),
    "rms_norm_backward": (_rms_norm_backward_kernel, _rms_norm_backward_fake),
    "cross_entropy_forward": (_cross_entropy_forward_kernel, _cross_entropy_forward_fake),
    "cross_entropy_backward": (_cross_entropy_backward_kernel, _cross_entropy_backward_fake),
    "layer_norm_with_stats": (_layer_norm_with_stats_kernel, _layer_norm_with_stats_fake),
    "rms_norm_with_stats": (_rms_norm_with_stats_kernel, _rms_norm_with_stats_fake),
}
