"""``torch.ops.xetile.*`` (ops/torch_ops.py) with the CPU build of PyTorch: registration
without an XPU device, CPU tensors run (copied in and out, here in the interpreter), other
devices refused with our message, the fake implementations
agreeing with what the numpy entry points return (shape, dtype and refusals), one graph
node per op under ``torch.compile``, ``torch.library.opcheck`` on meta tensors.  Running
the ops on XPU tensors needs an Intel GPU: those tests skip with the reason here.

Without torch these skip (a user's machine: torch is no test extra); CI installs a torch
and sets XETILE_REQUIRE_TORCH=1, which turns those skips into failures (not the XPU ones)."""
from __future__ import annotations

import inspect
import re
import sys
import types
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from conftest_tools import require_torch, require_torch_xpu
from ops_ref import BF16, assert_within, attention_ref, matmul_ref, norm_ref, softmax_ref
from xetile_dsl import ops
from xetile_dsl.errors import LaunchError, UsageError
from xetile_dsl.ops import configs, torch_ops

README = Path(__file__).resolve().parents[2] / "README.md"
RNG = np.random.default_rng(14)
A16 = RNG.standard_normal((37, 64)).astype(np.float16)
B16 = RNG.standard_normal((64, 48)).astype(np.float16)
BIAS = RNG.standard_normal(48).astype(np.float32)
I8A = RNG.integers(-128, 128, (37, 64)).astype(np.int8)
I8B = RNG.integers(-128, 128, (48, 64)).astype(np.int8)          # stored [N, K]: trans_b
X = (RNG.standard_normal((2, 3, 40)) * 3).astype(np.float32)
W, WB = RNG.standard_normal(40).astype(np.float32), RNG.standard_normal(40).astype(np.float32)
Q = RNG.standard_normal((1, 2, 20, 64)).astype(np.float16)
DQ = RNG.standard_normal((2, 4, 64)).astype(np.float16)              # decode: 4 heads, 2 kv heads
DK = RNG.standard_normal((3, 16, 2, 64)).astype(np.float16)           # 3 blocks of 16
DTABLE, DLENS = np.array([[2, 0], [1, 2]], np.int32), np.array([20, 9], np.int32)
XQ = RNG.standard_normal((1, 256)).astype(np.float16)    # the kernel of a test_ops_matmul_wq case (cached)
WQ = ops.quantize_weights(RNG.standard_normal((256, 45)).astype(np.float16))       # (w_packed, scales, zeros)
WQ8 = ops.quantize_weights(RNG.standard_normal((256, 45)).astype(np.float16), bits=8, format="e4m3")  # zeros None
DK8 = DK.astype(ml_dtypes.float8_e5m2)                               # an fp8 KV cache
#: the ops registered as torch ops: all but quantize_weights, a numpy host helper whose
#: outputs matmul_wq takes
TORCH_OPS = [name for name in ops.__all__ if name != "quantize_weights"]
STAT6 = RNG.random(6).astype(np.float32) + 0.5                   # a row statistic of X's 2 x 3 rows
TARGETS = RNG.integers(0, 40, (2, 3)).astype(np.int64)

#: (op, positional arguments, keyword arguments) with numpy arrays and dtypes; the torch
#: side gets tensors and torch dtypes in their places
CASES = {
    "matmul f16": ("matmul", (A16, B16), {}),
    "matmul f16 -> f32": ("matmul", (A16, B16), {"out_dtype": np.float32}),
    "matmul f16 -> bf16": ("matmul", (A16, B16), {"out_dtype": BF16}),
    "matmul transposed, bias, gelu": ("matmul", (A16.T.copy(), B16.T.copy()),
                                      {"trans_a": True, "trans_b": True, "bias": BIAS, "activation": "gelu"}),
    "matmul int8 -> int32": ("matmul", (I8A, I8B), {"trans_b": True}),
    "matmul uint8 -> int32": ("matmul", (I8A.view(np.uint8), I8B.view(np.uint8)), {"trans_b": True}),
    "softmax f32 [2, 3, N]": ("softmax", (X,), {}),
    "softmax bf16 dim=2": ("softmax", (X.astype(BF16), 2), {}),
    "layer_norm f16": ("layer_norm", (X.astype(np.float16), W, WB, 1e-5), {}),
    "rms_norm bf16": ("rms_norm", (X.astype(BF16), W.astype(np.float16), 1e-6), {}),
    "attention f16 causal": ("attention", (Q, Q[:, ::-1].copy(), Q[:, :, ::-1].copy()), {"causal": True}),
    "decode_attention f16 gqa": ("decode_attention", (DQ, DK, DK, DTABLE, DLENS), {}),
    "attention bf16 scale": ("attention", (Q.astype(BF16),) * 3, {"scale": 0.5}),
    "matmul_backward f16 bias gelu": ("matmul_backward", (A16, B16, RNG.standard_normal((37, 48)).astype(np.float32)),
                                      {"bias": BIAS, "activation": "gelu"}),
    "matmul_backward bf16 trans_a": ("matmul_backward", (A16.T.astype(BF16), B16.astype(BF16), A16[:, :48].copy()),
                                     {"trans_a": True}),
    "matmul_wq int4 f16": ("matmul_wq", (XQ, *WQ), {}),
    "matmul_wq fp8 e4m3 f16": ("matmul_wq", (XQ, *WQ8), {"bits": 8, "format": "e4m3"}),
    "decode_attention fp8 e5m2 cache": ("decode_attention", (DQ, DK8, DK8, DTABLE, DLENS), {}),
    "log_softmax f16": ("log_softmax", (X.astype(np.float16),), {}),
    "softmax_backward f32": ("softmax_backward", (X, X[::-1].copy()), {}),
    "log_softmax_backward bf16": ("log_softmax_backward", (X.astype(BF16), X.astype(BF16)), {}),
    "layer_norm_backward f16": ("layer_norm_backward", (X.astype(np.float16), X.astype(np.float16), W,
                                                        STAT6, STAT6), {}),
    "rms_norm_backward f32": ("rms_norm_backward", (X, X, W.astype(np.float16), STAT6), {}),
    "cross_entropy mean": ("cross_entropy", (X, TARGETS), {}),
    "cross_entropy none": ("cross_entropy", (X.astype(np.float16), TARGETS), {"reduction": "none"}),
    "cross_entropy_forward": ("cross_entropy_forward", (X, TARGETS), {}),
    "cross_entropy_backward": ("cross_entropy_backward", (X.astype(BF16), TARGETS, STAT6, STAT6), {}),
}

#: the LLM row ops (test_ops_llm_rows.py tests their torch ops; rope and add_rms_norm
#: return their inputs, so they are not in CASES' shape comparison)
IN_PLACE_CASES = {
    "rope": ("rope", (Q[0].copy(), Q[0, :, :1].copy(), np.arange(2, dtype=np.int32)), {}),
    "add_rms_norm": ("add_rms_norm", (X, X.copy(), W), {}),
    "silu_mul": ("silu_mul", (X,), {}),
}

#: ops returning tuples: (o, lse) and (dq, dk, dv), for the fake implementations' test
BACKWARD_CASES = {
    "attention_lse f16 causal": ("attention_lse", (Q, Q[:, :1].copy(), Q[:, :1].copy()), {"causal": True}),
    "attention_backward f16 causal": ("attention_backward", (Q, Q[:, :1].copy(), Q[:, :1].copy(), Q, Q,
                                                             np.zeros(Q.shape[:-1], np.float32)), {"causal": True}),
}

#: the same refusals from the numpy entry point and from the fake (tracing) implementation
REFUSALS = {
    "inner dimensions": ("matmul", (A16, B16[:40]), {}),
    "int8 with an activation": ("matmul", (I8A, I8B), {"trans_b": True, "activation": "relu"}),
    "out_dtype not allowed": ("matmul", (A16, B16), {"out_dtype": np.int32}),
    "bias shape": ("matmul", (A16, B16), {"bias": BIAS[:7]}),
    "softmax not along the last dim": ("softmax", (X, 0), {}),
    "softmax of int8": ("softmax", (I8A,), {}),
    "layer_norm weight shape": ("layer_norm", (X, W[:8], WB, 1e-5), {}),
    "attention head dim 48": ("attention", (Q[..., :48].copy(),) * 3, {}),
    "attention shapes differ": ("attention", (Q, Q[:, :1].copy(), Q), {}),
    "decode_attention heads not divisible": ("decode_attention", (DQ[:, :3].copy(), DK, DK, DTABLE, DLENS), {}),
    "matmul_wq K not a group multiple": ("matmul_wq", (XQ[:, :200].copy(), *WQ), {}),
    "softmax_backward dy shape": ("softmax_backward", (X, X[:1].copy()), {}),
    "layer_norm_backward dy dtype": ("layer_norm_backward", (I8A, A16, W[:1].repeat(64), STAT6, STAT6), {}),
    "cross_entropy targets shape": ("cross_entropy", (X, TARGETS[:1].copy()), {}),
    "cross_entropy reduction": ("cross_entropy", (X, TARGETS), {"reduction": "max"}),
}


@pytest.fixture(scope="module")
def torch():
    return require_torch()


@pytest.fixture(scope="module")
def xetile(torch):
    torch_ops.register()
    return torch.ops.xetile


def _torch_dtype(torch, dtype):
    dtype = np.dtype(dtype)
    return getattr(torch, "bfloat16" if dtype == BF16 else dtype.name)


def _as_torch(torch, value, tensor):
    """``value`` for the torch op: arrays through ``tensor(array)``, dtypes as torch dtypes."""
    if isinstance(value, np.ndarray):
        return tensor(value)
    if isinstance(value, type) or isinstance(value, np.dtype):
        return _torch_dtype(torch, value)
    return value


def _call(op_namespace, case, tensor, torch):
    name, args, kwargs = case
    return getattr(op_namespace, name)(*(_as_torch(torch, a, tensor) for a in args),
                                       **{k: _as_torch(torch, v, tensor) for k, v in kwargs.items()})


def _fake_xpu(torch, mode):
    """Fake XPU tensors (no device needed) shaped like the numpy arrays."""
    def tensor(array):
        with mode:
            return torch.empty(array.shape, dtype=_torch_dtype(torch, array.dtype), device="xpu")
    return tensor


def _cpu(torch):
    def tensor(array):
        bits = np.int16 if array.dtype == BF16 else np.uint8 if array.dtype.name.startswith("float8") else None
        return torch.from_numpy(array.view(bits) if bits else array).view(_torch_dtype(torch, array.dtype))
    return tensor


def _numpy_op(case):
    name, args, kwargs = case
    return getattr(ops, name)(*args, target="interpret", **kwargs)


# --- registration ---------------------------------------------------------------------------

def test_register_without_torch_or_with_an_old_one_says_what_is_missing(monkeypatch):
    """Runs everywhere: torch is hidden (import fails) or replaced by a pre-2.4 stand-in."""
    monkeypatch.setattr(torch_ops, "_REGISTERED", {})
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(UsageError, match=r"register\(\) needs PyTorch >= 2\.4"):
        torch_ops.register()
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(__version__="2.3.1", library=types.SimpleNamespace()))
    with pytest.raises(UsageError, match=r"torch 2\.3\.1 has no torch\.library\.custom_op: torch >= 2\.4 is needed"):
        torch_ops.register()


def test_register_needs_no_xpu_and_keeps_every_keyword_argument(torch, xetile):
    """Every op registers (CI: on a machine without XPU), once (a second call returns the same
    ops, no "already registered"), each schema taking the numpy entry point's arguments
    with its defaults (all of them but ``out=``, e.g. matmul's out_dtype and target); a
    ``return_stats`` flag, which changes how many tensors come back, is a torch op of its
    own (``layer_norm_with_stats``: the entry point without the flag)."""
    registered = torch_ops.register()
    assert torch_ops.register() is registered
    assert sorted(registered) == sorted([*TORCH_OPS, *torch_ops.WITH_FLAG])
    for name in registered:
        entry_name, _ = torch_ops.WITH_FLAG.get(name, (name, None))
        schema = getattr(xetile, name).default._schema
        entry = inspect.signature(getattr(ops, entry_name)).parameters
        assert [a.name for a in schema.arguments] == [p for p in entry if p not in ("out", "return_stats", "return_lse")], name
        for argument in schema.arguments:
            default = entry[argument.name].default
            if default is not inspect.Parameter.empty:
                assert argument.default_value == default, (name, argument.name)
        # rope rotates q and k in place and returns nothing (a custom op may not return its inputs)
        returns = {"matmul_backward": 3, "rope": 0, "attention_backward": 3, "attention_lse": 2, "layer_norm_backward": 3, "layer_norm_with_stats": 3,
                   "rms_norm_backward": 2, "rms_norm_with_stats": 2, "cross_entropy_forward": 2}.get(name, 1)
        assert [r.type.kind() for r in schema.returns] == ["TensorType"] * returns, name


# --- CPU tensors: run, copied in and out; other devices refused with our message -----------

def _results(result):
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("case", ["matmul transposed, bias, gelu", "matmul f16 -> bf16", "softmax f32 [2, 3, N]",
                                  "layer_norm f16", "rms_norm bf16", "attention f16 causal",
                                  "matmul_backward f16 bias gelu", "matmul_backward bf16 trans_a",
                                  "matmul_wq fp8 e4m3 f16", "decode_attention fp8 e5m2 cache"])
def test_registered_op_on_cpu_tensors_is_the_numpy_op(torch, xetile, case):
    """CPU tensors run as numpy arrays do (target= passes through: the interpreter here):
    the same bits as the numpy entry point's result, as CPU tensors of the same dtypes
    (bf16 through its bits; matmul_backward's missing dbias an empty f32 tensor)."""
    name, args, kwargs = CASES[case]
    got = _results(_call(xetile, (name, args, {**kwargs, "target": "interpret"}), _cpu(torch), torch))
    want = _results(_numpy_op(CASES[case]))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.device.type == "cpu"
        if w is None:
            assert tuple(g.shape) == (0,) and g.dtype == torch.float32
            continue
        assert g.dtype == _torch_dtype(torch, w.dtype)
        np.testing.assert_array_equal(_host(torch, g), w)


def test_registered_op_refuses_other_devices_and_mixed_devices_with_our_message(torch):
    """A tensor on another device (an MPS one here, a stand-in: this machine has none) is
    our UsageError naming the op and the argument, not torch's "no kernel for this
    backend"; CPU and XPU tensors in one call are refused before anything runs."""
    class Tensor:
        def __init__(self, device):
            self.device = torch.device(device)   # "xpu" is a valid device name without an XPU

    with pytest.raises(UsageError, match=r"^torch\.ops\.xetile\.matmul: b is a tensor on device 'mps:0'; "
                                         r".*\.to\('xpu'\) or \.cpu\(\)"):
        torch_ops._host_arrays("matmul", a=Tensor("cpu"), b=Tensor("mps:0"), bias=None)
    with pytest.raises(UsageError, match=r"^torch\.ops\.xetile\.softmax: the tensors are on 'cpu' and 'xpu' mixed"):
        torch_ops._host_arrays("softmax", x=Tensor("xpu"), y=Tensor("cpu"))


@pytest.mark.parametrize("name", TORCH_OPS)
def test_numpy_entry_points_refuse_cpu_tensors(torch, name):
    """``ops.*`` (not the registered ops) given torch CPU tensors on the CPU device: the launcher's LaunchError
    (move with .to('xpu'), or pass tensor.numpy()).  Attention gets whole query blocks
    (N = 32), else its "device arrays need N a multiple of the block" comes first."""
    case = ("attention", (Q[:, :, :16].repeat(2, axis=2),) * 3, {}) if name == "attention" else \
        next(c for c in (*CASES.values(), *IN_PLACE_CASES.values(), *BACKWARD_CASES.values()) if c[0] == name)
    args = [_cpu(torch)(a) if isinstance(a, np.ndarray) else a for a in case[1]]
    with pytest.raises(LaunchError, match=r"torch tensor on device 'cpu'; .*\.to\('xpu'\).*tensor\.numpy\(\)"):
        getattr(ops, name)(*args, **case[2])


# --- fake implementations against the numpy entry points -----------------------------------

@pytest.mark.parametrize("case", list(CASES))
def test_fake_gives_the_shape_and_dtype_the_op_returns(torch, xetile, case):
    """The op run on numpy arrays (in the interpreter: the entry point, which allocates the
    result, is the same for every target) against the fake implementation on fake XPU
    tensors of the same shapes and dtypes."""
    from torch._subclasses.fake_tensor import FakeTensorMode  # torch is optional

    real = _results(_numpy_op(CASES[case]))
    mode = FakeTensorMode()
    with mode:
        fake = _results(_call(xetile, CASES[case], _fake_xpu(torch, mode), torch))
    reals = _results(real)
    assert len(fake) == len(reals), case
    for f, r in zip(fake, reals):
        r = np.empty(0, np.float32) if r is None else np.asarray(r)   # no bias: an empty f32 dbias
        assert tuple(f.shape) == r.shape and f.dtype == _torch_dtype(torch, r.dtype), case
        assert f.device.type == "xpu"


@pytest.mark.parametrize("name", sorted(n for n in torch_ops.WITH_FLAG if n.endswith("_with_stats")))
def test_fake_of_the_with_stats_ops_matches_return_stats(torch, xetile, name):
    """``layer_norm_with_stats`` / ``rms_norm_with_stats`` trace to what the numpy entry point
    returns with ``return_stats=True``: (y, mean, rstd) / (y, rstd), the statistics f32 per row."""
    from torch._subclasses.fake_tensor import FakeTensorMode  # torch is optional

    entry, _ = torch_ops.WITH_FLAG[name]
    args = (X.astype(np.float16), W, WB, 1e-5) if entry == "layer_norm" else (X.astype(np.float16), W, 1e-6)
    real = getattr(ops, entry)(*args, return_stats=True, target="interpret")
    mode = FakeTensorMode()
    with mode:
        fake = _call(xetile, (name, args, {}), _fake_xpu(torch, mode), torch)
    assert [(tuple(f.shape), f.dtype) for f in fake] == [(r.shape, _torch_dtype(torch, r.dtype)) for r in real]


@pytest.mark.parametrize("case", list(BACKWARD_CASES))
def test_tuple_fakes_give_the_shapes_and_dtypes_the_op_returns(torch, xetile, case):
    """attention_lse (``ops.attention(..., return_lse=True)``) and attention_backward: each
    result of the fake against the numpy entry point's."""
    from torch._subclasses.fake_tensor import FakeTensorMode  # torch is optional

    name, args, kwargs = BACKWARD_CASES[case]
    real = (ops.attention(*args, return_lse=True, target="interpret", **kwargs) if name == "attention_lse" else
            _numpy_op(BACKWARD_CASES[case]))
    mode = FakeTensorMode()
    with mode:
        fake = _call(xetile, BACKWARD_CASES[case], _fake_xpu(torch, mode), torch)
    assert [(tuple(f.shape), f.dtype, f.device.type) for f in fake] == \
        [(r.shape, _torch_dtype(torch, r.dtype), "xpu") for r in real]


@pytest.mark.parametrize("case", list(REFUSALS))
def test_fake_refuses_what_the_op_refuses(torch, xetile, case):
    """Tracing a call the op would refuse fails at trace time with the op's own message."""
    from torch._subclasses.fake_tensor import FakeTensorMode  # torch is optional

    with pytest.raises(UsageError) as from_numpy:
        _numpy_op(REFUSALS[case])
    mode = FakeTensorMode()
    with mode, pytest.raises(UsageError) as from_fake:
        _call(xetile, REFUSALS[case], _fake_xpu(torch, mode), torch)
    assert str(from_fake.value) == str(from_numpy.value)


def test_readme_example_runs_on_fake_xpu_tensors(torch):
    """The README's torch.ops.xetile example, as written, under FakeTensorMode (its XPU
    tensors are fake, so it runs without a device): register(), the arguments it passes
    and the result dtypes are what the README says."""
    from torch._subclasses.fake_tensor import FakeTensorMode  # torch is optional

    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    (example,) = [b for b in blocks if "torch.ops.xetile" in b and 'device="xpu"' in b]
    names = {}
    with FakeTensorMode():
        exec(compile(example, "README.md", "exec"), names)
    for result in (names["c"], names["y"]):
        assert (tuple(result.shape), result.dtype, result.device.type) == ((512, 512), torch.float32, "xpu")


# --- torch.compile and opcheck --------------------------------------------------------------

def test_torch_compile_keeps_each_op_as_one_node(torch, xetile):
    """fullgraph=True (no graph break) with a backend recording the FX graph: one node per
    op, carrying the fake result's shape and dtype; the graph then runs on the CPU tensors
    (in the interpreter) and gives what the ops give called one by one."""
    graphs = []

    def record(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def model(a, b, x, w, bias, q):
        t = "interpret"
        return (xetile.matmul(a, b, out_dtype=torch.float32, target=t), xetile.softmax(x, target=t),
                xetile.layer_norm(x, w, bias, 1e-5, target=t), xetile.rms_norm(x, w, target=t),
                xetile.attention(q, q, q, causal=True, target=t))

    tensor = _cpu(torch)
    compiled = torch.compile(model, fullgraph=True, backend=record)
    inputs = [tensor(v) for v in (A16, B16, X, W, WB, Q)]
    for got, want in zip(compiled(*inputs), model(*inputs), strict=True):
        assert torch.equal(got, want)
    (graph,) = graphs
    calls = [n for n in graph.graph.nodes if n.op == "call_function"]
    assert [str(n.target).split(".")[:2] for n in calls] == [["xetile", name] for name in
                                                            ("matmul", "softmax", "layer_norm", "rms_norm", "attention")]
    results = [n.meta["example_value"] for n in calls]
    assert [(tuple(r.shape), r.dtype) for r in results] == [
        ((37, 48), torch.float32), (X.shape, torch.float32), (X.shape, torch.float32), (X.shape, torch.float32),
        (Q.shape, torch.float16)]


@pytest.mark.parametrize("case", ["matmul transposed, bias, gelu", "matmul int8 -> int32", "softmax bf16 dim=2",
                                  "layer_norm f16", "rms_norm bf16", "attention f16 causal",
                                  "matmul_backward f16 bias gelu",
                                  "layer_norm_backward f16", "cross_entropy_forward"])
def test_opcheck_on_meta_tensors(torch, xetile, case):
    """torch.library.opcheck's schema, autograd-registration, fake-tensor and AOT-dispatch
    (dynamic shapes) checks.  The kernel needs XPU tensors, so the tensors are meta: their
    "real" run is the fake implementation; that it matches the kernel is tested above."""
    name, args, kwargs = CASES[case]

    def meta(array):
        return torch.empty(array.shape, dtype=_torch_dtype(torch, array.dtype), device="meta")

    result = torch.library.opcheck(getattr(xetile, name).default, tuple(_as_torch(torch, a, meta) for a in args),
                                   {k: _as_torch(torch, v, meta) for k, v in kwargs.items()})
    assert set(result.values()) == {"SUCCESS"}, result


# --- on XPU tensors (an Intel GPU; skipped with the reason elsewhere) -----------------------

def _xpu(torch):
    return lambda array: _cpu(torch)(array).to("xpu")


def _host(torch, tensor):
    """numpy copy of a result tensor (bf16 through its bits, as numpy has no bfloat16)."""
    t = tensor.cpu()
    return t.view(torch.int16).numpy().view(BF16) if t.dtype == torch.bfloat16 else t.numpy()


@pytest.mark.parametrize("case", ["matmul f16 -> f32", "matmul transposed, bias, gelu", "matmul int8 -> int32",
                                  "softmax f32 [2, 3, N]", "layer_norm f16", "rms_norm bf16"])
def test_registered_op_on_xpu_matches_numpy(case):
    torch = require_torch_xpu()
    torch_ops.register()
    name, args, kwargs = CASES[case]
    result = _call(torch.ops.xetile, CASES[case], _xpu(torch), torch)
    assert result.device.type == "xpu"
    got = _host(torch, result)
    chunk = configs.row_tiles(configs.resolve_target(None))[1]
    if name == "matmul":
        a = args[0].T if kwargs.get("trans_a") else args[0]
        b = args[1].T if kwargs.get("trans_b") else args[1]
        if a.dtype.kind in "iu":
            np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))
            return
        ref = matmul_ref(a, b, kwargs.get("bias"), kwargs.get("activation"), kwargs.get("out_dtype") or a.dtype)
    elif name == "softmax":
        ref = softmax_ref(args[0], args[0].dtype, chunk)
    else:
        x, w = args[0], args[1]
        bias = args[2] if name == "layer_norm" else None
        ref = norm_ref(x, w, bias, args[-1], x.dtype, chunk, rms=name == "rms_norm")
    assert_within(got, *ref, f"torch xpu {case}")


def test_registered_attention_on_xpu_matches_numpy():
    torch = require_torch_xpu()
    torch_ops.register()
    q, k, v = (RNG.standard_normal((1, 2, 64, 64)).astype(np.float16) for _ in range(3))   # N: whole blocks
    o = torch.ops.xetile.attention(*(_xpu(torch)(x) for x in (q, k, v)), causal=True)
    assert o.device.type == "xpu" and o.dtype == torch.float16
    assert_within(o.cpu().numpy(), *attention_ref(q, k, v, True), "torch xpu attention")
