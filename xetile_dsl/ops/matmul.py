"""``ops.matmul``: C = act(op(A) @ op(B) + bias) on DPAS, one kernel for every case.

The kernel is the subgroup GEMM of ``kernels/gemm_transposed.py`` with every choice a
constexpr: a transposed operand is read through an ``order=(0, 1)`` tile of the array as
stored (no copy), the bias row and the activation are fused after the K loop, and the
result is converted once on the way out.  Edges need no code: loads outside the arrays
read 0 and stores outside are dropped, so M, N and K need not be tile multiples."""
from __future__ import annotations

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

from ..errors import UsageError
from ..kernels.gemm_loop import subgroup_gemm
from ..dtypes import numpy_is_float
from . import configs, operands
from .._lazy import LazyModule

nv_launch = LazyModule("xetile_dsl.nv_launch", globals())  # the NVIDIA launch path: only for CUDA arrays

#: activation name -> the ACT constexpr of the kernel
ACTIVATIONS = {None: 0, "relu": 1, "gelu": 2, "silu": 3, "gelu_tanh": 4}

#: numpy dtype name -> language dtype (constexprs of the kernel)
XT_DTYPES = {"float16": xt.float16, "bfloat16": xt.bfloat16, "float32": xt.float32, "int32": xt.int32}

#: fp8 inputs: tile_mma converts them to f16 in registers (exact), so they run the f16 tiles
FP8_INPUTS = ("float8_e4m3fn", "float8_e5m2")

#: input dtype -> (accumulator, default output, allowed outputs)
ACCUMULATION = {
    "float16": ("float32", "float16", ("float16", "bfloat16", "float32")),
    "bfloat16": ("float32", "bfloat16", ("float16", "bfloat16", "float32")),
    "float32": ("float32", "float32", ("float16", "bfloat16", "float32")),   # tf32 (PVC DPAS, NVIDIA mma.sync)
    "float8_e4m3fn": ("float32", "float32", ("float16", "bfloat16", "float32")),
    "float8_e5m2": ("float32", "float32", ("float16", "bfloat16", "float32")),
    "int8": ("int32", "int32", ("int32",)),
    "uint8": ("int32", "int32", ("int32",)),
}


@xd.jit
def matmul_kernel(a, b, bias, c, K, TA: xt.constexpr, TB: xt.constexpr, HAS_BIAS: xt.constexpr,
                  ACT: xt.constexpr, ACC: xt.constexpr, OUT: xt.constexpr,
                  BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """c[M, N] = act(op(a) @ op(b) + bias) with op = transpose when TA / TB (the array is
    then stored [K, M] / [N, K]); ACT 0 none, 1 relu, 2 gelu (erf form), 3 silu, 4 gelu
    (tanh form)."""
    matmul_tile(a, b, bias, c, K, xt.program_id(0), xt.program_id(1), TA, TB, HAS_BIAS, ACT, ACC, OUT, BM, BN, BK)


@xd.jit
def matmul_grouped_kernel(a, b, bias, c, K, TA: xt.constexpr, TB: xt.constexpr, HAS_BIAS: xt.constexpr,
                          ACT: xt.constexpr, ACC: xt.constexpr, OUT: xt.constexpr,
                          BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, GM: xt.constexpr):
    """:func:`matmul_kernel` with its programs in groups of ``GM`` row blocks: over the
    same (row blocks, column blocks) grid, the launch order (x fastest) runs down GM row
    blocks of a column block before the next column block, so the programs of one wave
    share A's and B's panels in L2 (``OpTiles.gemm_group_m``; the last group may be
    shorter)."""
    nm = xt.num_programs(0)
    pid = xt.program_id(0) + xt.program_id(1) * nm
    width = GM * xt.num_programs(1)
    first = (pid // width) * GM
    rows = xt.minimum(nm - first, GM)
    pid_m = first + (pid % width) % rows
    pid_n = (pid % width) // rows
    matmul_tile(a, b, bias, c, K, pid_m, pid_n, TA, TB, HAS_BIAS, ACT, ACC, OUT, BM, BN, BK)


@xd.jit
def matmul_tile(a, b, bias, c, K, pid_m, pid_n, TA, TB, HAS_BIAS, ACT, ACC, OUT, BM, BN, BK):
    """The body of both kernels: the (pid_m, pid_n) tile of c (traced inline)."""
    acc = subgroup_gemm(a, b, pid_m * BM, pid_n * BN, K, BM, BN, BK, ACC, (0, 1) if TA else (1, 0), (0, 1) if TB else (1, 0))
    if HAS_BIAS:
        acc = acc + xt.astype(xt.load_tile(xt.init_tile(bias, [0, pid_n * BN], [1, BN])), ACC)
    if ACT == 1:
        acc = xt.maximum(acc, 0.0)
    if ACT == 2:
        acc = 0.5 * acc * (1.0 + xt.erf(acc * 0.7071067811865476))
    if ACT == 3:
        acc = acc * xt.sigmoid(acc)
    if ACT == 4:
        acc = 0.5 * acc * (1.0 + xt.tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)))
    xt.store_tile(xt.astype(acc, OUT), xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))


def matmul(a, b, *, trans_a: bool = False, trans_b: bool = False, bias=None, activation: str | None = None,
           out_dtype=None, out=None, target: str | None = None):
    """``act(op(a) @ op(b) + bias)``: ``op(a)`` is ``a`` [M, K], or with ``trans_a`` the
    transpose of ``a`` stored [K, M] (``op(b)``: ``b`` [K, N] or, ``trans_b``, [N, K]).

    Inputs f16 or bf16 (f32 accumulation, f16/bf16/f32 out, default the input dtype),
    fp8 (``ml_dtypes.float8_e4m3fn`` / ``float8_e5m2``, mixed allowed: converted to f16
    in registers, f32 accumulation, default out f32), f32 (tf32: DPAS on PVC, mma.sync m16n8k8 on NVIDIA) or int8/uint8 (i32 out, no bias or activation; NVIDIA: mma.sync m16n8k16 s8/u8).  ``bias`` is
    [N]; ``activation`` None, "relu", "gelu" (erf form), "gelu_tanh" (tanh form, torch's
    ``approximate="tanh"``) or "silu".  Arrays: numpy (result numpy),
    dpnp/USM or torch XPU (result on the same queue, returned at once: the launch is
    asynchronous).  ``target`` as in ``kernel.on(target)`` (default: the device's)."""
    return matmul_launch(a, b, trans_a=trans_a, trans_b=trans_b, bias=bias, activation=activation,
                         out_dtype=out_dtype, out=out, target=target)[0]


def matmul_launch(a, b, *, trans_a: bool = False, trans_b: bool = False, bias=None, activation: str | None = None,
                  out_dtype=None, out=None, target: str | None = None):
    """:func:`matmul` returning ``(result, event)``: the runtime's event of the launch for
    device arrays (benchmarks read its profiling times), None for numpy arrays.  A torch
    CUDA launch whose shapes, strides, dtypes, devices and flags match an earlier one that
    needed no copies reuses that one's plan (its checks passed for the same metadata)."""
    key = _plan_key(a, b, trans_a, trans_b, bias, activation, out_dtype, out, target)
    plan = _PLANS.get(key) if key is not None else None
    if plan is not None:
        kernel, grid, consts, shape, np_out, N, K, relaunch = plan
        buffer, result = (out, out) if out is not None else operands.output_buffer(out, a, shape, np_out)
        if relaunch is not None and buffer is result and relaunch[0].valid() and \
                relaunch[0](a.data_ptr(), b.data_ptr(), relaunch[1], buffer.data_ptr()):
            return result, relaunch[0].kernel
        return result, kernel[grid](a, b, _bias_row(bias, N, a), buffer, K, **consts)
    given = (a, b, trans_a, trans_b)
    a, b = operands.as_array(a, "a"), operands.as_array(b, "b")
    a, trans_a = _row_major(a, trans_a)
    b, trans_b = _row_major(b, trans_b)
    M, K, N = _shapes(a, b, trans_a, trans_b)
    in_name = _input_dtype(a, b)
    acc_name, out_name = _output_dtype(in_name, out_dtype, bias, activation)
    _check_fp8_transpose(in_name, trans_a)
    target = configs.resolve_target(target, a)
    a, b, trans_a, trans_b = row_major_operands(target, a, b, trans_a, trans_b)
    tile_name = "float16" if in_name in FP8_INPUTS else in_name
    if in_name in FP8_INPUTS and "fp8" in dict(configs.gpu_of(target).ops_tiles().gemm):
        tile_name = "fp8"   # (NVIDIA: the fp8 GEMM's mma.sync tiles, not the f16 wgmma ones)
    BM, BN, BK = configs.gemm_tiles(target, tile_name, M, trans_a,
                                    epilogue=bias is not None or activation is not None, n=N)
    bias_row = _bias_row(bias, N, a)
    buffer, result = operands.output_buffer(out, a, (M, N), _np_dtype(out_name))
    if M == 0 or N == 0:
        return result, None
    grid = (-(-M // BM), -(-N // BN))
    group = configs.gemm_group(target)
    kernel = (matmul_grouped_kernel if group else matmul_kernel).on(target)
    consts = dict(TA=trans_a, TB=trans_b, HAS_BIAS=bias is not None, ACT=ACTIVATIONS[activation],
                  ACC=XT_DTYPES[acc_name], OUT=XT_DTYPES[out_name], BM=BM, BN=BN, BK=BK, **group,
                  **configs.gemm_launch_options(target, activation, fp8=tile_name == "fp8", dtype_name=tile_name))
    fa, fb = operands.fit_rows(a, "a"), operands.fit_rows(b, "b")
    event = kernel[grid](fa, fb, bias_row, buffer, K, **consts)
    if key is not None and buffer is result and fa is given[0] and fb is given[1] and \
            (trans_a, trans_b) == given[2:]:
        relaunch = None
        if bias is None and configs.is_nvidia(target):      # (a bias is made a [1, N] f32 row a call)
            made = nv_launch.relaunch_of(kernel.jit, grid, target, (fa, fb, bias_row, buffer, K), consts)
            relaunch = (made, bias_row.data_ptr()) if made is not None else None
        _PLANS[key] = (kernel, grid, consts, (M, N), _np_dtype(out_name), N, K, relaunch)
    return operands.copy_back(buffer, result), event


#: ``matmul_launch``'s plans of torch CUDA launches that needed no copies: launch key ->
#: (kernel, grid, constexprs, C's shape, C's dtype, N, K, (the launch's ``nv_launch.Relaunch``,
#: the placeholder bias row's address) or None where a bias is fused)
_PLANS: dict = {}


def _plan_key(a, b, trans_a, trans_b, bias, activation, out_dtype, out, target):
    """What ``matmul_launch``'s checks and choices depend on, for torch CUDA ``a`` and
    ``b`` (None otherwise, or where a part does not hash)."""
    if getattr(a, "is_cuda", None) is not True or getattr(b, "is_cuda", None) is not True:
        return None
    try:
        key = (a.shape, a.stride(), a.dtype, a.device, b.shape, b.stride(), b.dtype, b.device, trans_a, trans_b,
               None if bias is None else (type(bias), getattr(bias, "shape", None), getattr(bias, "dtype", None),
                                          getattr(bias, "device", None)),
               activation, out_dtype,
               None if out is None else (type(out), out.shape, out.stride(), out.dtype, out.device), target)
        hash(key)
    except (AttributeError, TypeError):
        return None
    return key


def row_major_operands(target: str, a, b, trans_a: bool, trans_b: bool):
    """``(a, b, False, False)`` with a transposed operand copied into its row-major form
    where ``target`` is an NVIDIA target (its column-major tiles are not lowered: the
    copy is one pass over the operand on its own device, by its own library); the
    operands as they are elsewhere.

    >>> x = np.ones((3, 2), np.float16)
    >>> row_major_operands("sm90", x, x, True, False)[0].shape
    (2, 3)
    """
    if not configs.is_nvidia(target):
        return a, b, trans_a, trans_b
    return (transposed_copy(a) if trans_a else a), (transposed_copy(b) if trans_b else b), False, False


def transposed_copy(x):
    """The row-major copy of a 2-D array's transpose (numpy, torch)."""
    if isinstance(x, np.ndarray):
        return np.ascontiguousarray(x.T)
    return x.t().contiguous() if hasattr(x, "t") else x.T.copy()


def matmul_result(a, b, *, trans_a: bool = False, trans_b: bool = False, bias=None, activation: str | None = None,
                  out_dtype=None) -> tuple[tuple[int, int], np.dtype]:
    """(shape, dtype) of what :func:`matmul` returns for these operands, checked as it
    checks them (same UsageErrors), without running anything: the torch fake
    implementation (``ops/torch_ops.py``) traces with it, so the two cannot disagree."""
    a, trans_a = _row_major(a, trans_a)
    b, trans_b = _row_major(b, trans_b)
    M, _, N = _shapes(a, b, trans_a, trans_b)
    in_name = _input_dtype(a, b)
    _, out_name = _output_dtype(in_name, out_dtype, bias, activation)
    _check_fp8_transpose(in_name, trans_a)
    if bias is not None:
        _check_bias(bias, N)
    return (M, N), _np_dtype(out_name)


def _np_dtype(name: str) -> np.dtype:
    return np.dtype(operands.BF16 if name == "bfloat16" else name)


def _row_major(x, trans: bool):
    """A numpy array stored column-major is the row-major transpose: read it as that
    (flipping ``trans``) instead of copying it."""
    if x.ndim != 2:
        raise UsageError(f"matmul takes 2-D arrays, got shape {tuple(x.shape)}; loop over batches "
                         "or reshape [B, M, K] to [B * M, K] when B shares the other operand")
    if isinstance(x, np.ndarray) and not x.flags.c_contiguous and x.T.flags.c_contiguous:
        return x.T, not trans
    if isinstance(x, np.ndarray) and not x.flags.c_contiguous:
        return np.ascontiguousarray(x), trans
    return x, trans


def _shapes(a, b, trans_a: bool, trans_b: bool) -> tuple[int, int, int]:
    M, K = (a.shape[1], a.shape[0]) if trans_a else tuple(a.shape)
    K2, N = (b.shape[1], b.shape[0]) if trans_b else tuple(b.shape)
    if K != K2:
        raise UsageError(f"matmul: op(a) is {M}x{K} but op(b) is {K2}x{N}: the inner dimensions must agree "
                         f"(trans_a={trans_a}, trans_b={trans_b})")
    if K == 0:
        raise UsageError("matmul: K = 0 (nothing to accumulate); the product is all zeros")
    return int(M), int(K), int(N)


def _input_dtype(a, b) -> str:
    da, db = operands.dtype_of(a), operands.dtype_of(b)
    names = {da.name if da != operands.BF16 else "bfloat16", db.name if db != operands.BF16 else "bfloat16"}
    if names <= {"int8", "uint8"}:
        return da.name if da == db else "int8"   # mixed i8/u8 DPAS exists; both use the int8 row
    if names <= set(FP8_INPUTS):
        return da.name   # mixed e4m3fn/e5m2: both become f16 in registers
    if da != db:
        raise UsageError(f"matmul: a is {da} and b is {db}; both must have one dtype "
                         f"(float16, bfloat16, float32 = tf32, or int8/uint8; or fp8 e4m3fn/e5m2, "
                         f"mixed allowed)")
    name = names.pop()
    if name not in ACCUMULATION:
        raise UsageError(f"matmul: {name} inputs are not supported; use float16, bfloat16, float32 (tf32) "
                         "or int8/uint8")
    return name


def _check_fp8_transpose(in_name: str, trans_a: bool) -> None:
    if in_name in FP8_INPUTS and trans_a:
        raise UsageError("matmul: a transposed fp8 a (trans_a=True, or a column-major a) is not supported; "
                         "pass a stored [M, K] row-major (trans_b is supported)")


def _output_dtype(in_name: str, out_dtype, bias, activation) -> tuple[str, str]:
    acc, default, allowed = ACCUMULATION[in_name]
    if activation not in ACTIVATIONS:
        raise UsageError(f"matmul: activation {activation!r}; expected one of None, 'relu', 'gelu', 'gelu_tanh', 'silu'")
    if acc == "int32" and (bias is not None or activation is not None):
        raise UsageError("matmul: int8 inputs give exact int32 sums; bias and activation are not fused for them "
                         "(apply them to the int32 result)")
    name = default if out_dtype is None else _dtype_name(out_dtype)
    if name not in allowed:
        raise UsageError(f"matmul: out_dtype {name} for {in_name} inputs; allowed: {', '.join(allowed)}")
    return acc, name


def _dtype_name(dtype) -> str:
    if operands.is_torch(dtype) or str(dtype).startswith("torch."):
        return str(dtype).removeprefix("torch.")
    d = np.dtype(dtype)
    return "bfloat16" if d == operands.BF16 else d.name


#: the placeholder bias row of ops.matmul without a bias, one a CUDA device (never read:
#: HAS_BIAS is off), so that a call allocates and copies nothing for it
_NO_BIAS: dict = {}


def _bias_row(bias, N: int, like):
    """The bias as a [1, N] row (2D-block wide); a one-row placeholder when there is none."""
    if bias is None:
        if isinstance(like, np.ndarray):
            return np.zeros((1, operands.MIN_ROW_BYTES // 4), np.float32)
        key = str(like.device) if getattr(like, "is_cuda", False) else None
        row = _NO_BIAS.get(key) if key else None
        if row is None:
            row = operands.fit_rows(operands.empty_like_input(like, (1, 16), np.float32), "bias")
            if key:
                _NO_BIAS[key] = row
        return row
    bias = _check_bias(operands.as_array(bias, "bias"), N)
    return operands.fit_rows(bias.reshape(1, N), "bias")


def _check_bias(bias, N: int):
    """``bias`` if it is a float array of shape (N,), else the UsageError saying so."""
    if tuple(bias.shape) != (N,):
        raise UsageError(f"matmul: bias must have shape ({N},) (one value per output column), got {tuple(bias.shape)}")
    if not numpy_is_float(operands.dtype_of(bias)):
        raise UsageError(f"matmul: bias must be a float array, got {operands.dtype_of(bias)}")
    return bias
