"""``ops.quantize_weights`` / ``ops.matmul_wq``: y = x @ dequant(w) with int4 or int8
weights dequantised in registers feeding DPAS (weight-only quantisation, W4A16 / W8A16).

The weight layout (docs/decisions/033-weight-layout-and-dequant-in-registers.md)
-------------------------------------------------------------------------------
``w`` is [K, N] (x @ w, the layout of ``ops.matmul``'s b; a torch ``Linear.weight`` is
its transpose).  ``quantize_weights`` returns ``w_packed`` int32 of shape
[Kp * bits / 32, N], Kp = K rounded up to :data:`BLOCK_K` [bits] (256 for int4, 128 for
int8): K is cut into blocks of ``BLOCK_K`` rows; packed row ``p`` (0 <= p < 32) of block
``b`` holds, in its field ``t`` (bits ``t*bits .. t*bits + bits - 1``, low field first),
the unsigned code of w[b * BLOCK_K + t * 32 + p, n].  So one field index ``t`` of a
32 x BN tile of packed rows is the 32 x BN slice of K rows ``t*32 ..`` of the block: the
kernel extracts it with one shift and one and (no interleave), and a 32 x 16 tile of
dwords is one 2D block read with one column per lane, the lane layout DPAS operand B
uses.  Codes past K are 0 (their x columns read 0).

``scales`` f16 [Kp / group_size, N] (int8: [1, N], per output channel) and ``zeros``
f16 of the same shape (the zero point, an integer code; ``None`` when symmetric: the
zero point is then 8 for int4 and 128 for int8, codes ``q`` = round(w / s) + zero):
dequant(w)[k, n] = (q - zero[k // group_size, n]) * scale[k // group_size, n].

fp8 weights (``format="e4m3"`` / ``"e5m2"``: OCP float8_e4m3fn / float8_e5m2, ml_dtypes'
types) use the int8 layout with the fp8 byte as the code, symmetric scales (f16 or f32,
one row per output channel or per group of ``group_size`` rows) and no zero point:
dequant(w)[k, n] = x-dtype(f32(fp8(q) * scale)) -- one rounding with f16 scales (the
product of a 4-bit and an 11-bit significand is exact in f32), the f32 product then x's
dtype with f32 scales.  The kernel decodes each byte with integer operations into an
int32 ``m * 2^e`` (exact, subnormal codes included), converts it to f32 and multiplies by
the scale and the format's unit: no fp8 instruction, no table, no gathers.  Codes are
finite: ``quantize_weights`` saturates, and the kernel reads the inf/NaN codes
(e4m3fn 0x7f, e5m2 exponent 31) as finite values.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

from ..errors import UsageError
from . import configs, operands
from .matmul import XT_DTYPES

#: rows of one field's slice of a block (one DPAS-K-multiple x tile, a 2D block of x)
FIELD_ROWS = 32
#: bits -> K rows per block of packed rows (32 packed rows x fields per dword)
BLOCK_K = {4: FIELD_ROWS * 8, 8: FIELD_ROWS * 4}
#: bits -> the zero point of symmetric codes
SYMMETRIC_ZERO = {4: 8, 8: 128}
#: format -> (ml_dtypes type name, mantissa bits, exponent bias, largest finite value)
FP8_FORMATS = {"e4m3": ("float8_e4m3fn", 3, 7, 448.0), "e5m2": ("float8_e5m2", 2, 15, 57344.0)}
#: the names ``format=`` accepts besides "int", "e4m3", "e5m2"
FORMAT_ALIASES = {"float8_e4m3fn": "e4m3", "e4m3fn": "e4m3", "float8_e5m2": "e5m2"}


def weight_format(format) -> str:
    """``"int"``, ``"e4m3"`` or ``"e5m2"`` of a ``format=`` argument (those strings, the
    ml_dtypes / torch names ``float8_e4m3fn`` / ``float8_e5m2``, or the ml_dtypes type)."""
    if isinstance(format, str):
        name = format
    elif isinstance(format, type) and issubclass(format, np.generic):    # ml_dtypes' scalar types
        name = np.dtype(format).name
    else:                                                                # numpy or torch dtypes
        name = str(format)
    name = name.removeprefix("torch.")
    name = FORMAT_ALIASES.get(name, name)
    if name not in ("int", *FP8_FORMATS):
        raise UsageError(f"weight format {format!r}: supported: \"int\" (int4/int8 codes), \"e4m3\" "
                         f"(float8_e4m3fn) and \"e5m2\" (float8_e5m2)")
    return name


def quantize_weights(w, bits: int = 4, group_size: int | None = None, symmetric: bool = False,
                     format: str = "int", scale_dtype=np.float16):
    """``(w_packed, scales, zeros)`` of a [K, N] f16/bf16/f32 numpy weight ``w`` (x @ w),
    in the layout :func:`matmul_wq` reads (module docstring): int4 per (group of
    ``group_size`` rows of K, default 128, column) with f16 scales and zero points, or
    (``bits=8``) int8 per output column (``group_size`` ignored).  ``symmetric``: codes
    around the fixed zero point (8 / 128) and ``zeros`` is None; else a per-group min/max
    range.

    ``format="e4m3"`` / ``"e5m2"`` (or ``"float8_e4m3fn"`` / ``"float8_e5m2"``, the
    ml_dtypes types; ``bits`` must be 8): fp8 codes ``fp8(w / s)`` (round to nearest even,
    saturated) with ``s = amax / fp8_max`` per output channel (``group_size=None``, the
    default) or per group of ``group_size`` rows; ``scales`` in ``scale_dtype`` (float16
    or float32), ``zeros`` always None (fp8 is symmetric; ``symmetric`` is ignored).

    Example::

        w = np.random.default_rng(0).standard_normal((256, 64)).astype(np.float16)
        w_packed, scales, zeros = ops.quantize_weights(w, bits=4, group_size=128)
        assert w_packed.shape == (32, 64) and scales.shape == (2, 64) and zeros.shape == (2, 64)
        w8, s8, z8 = ops.quantize_weights(w, bits=8, format="e4m3")      # fp8 per channel
        assert w8.shape == (64, 64) and s8.shape == (1, 64) and z8 is None
    """
    w = np.asarray(w)
    if w.ndim != 2 or w.dtype not in (np.float16, np.float32, operands.BF16):
        raise UsageError(f"quantize_weights: w must be a 2-D float16/bfloat16/float32 [K, N] array, got "
                         f"{w.dtype} of shape {w.shape}")
    if bits not in BLOCK_K:
        raise UsageError(f"quantize_weights: bits={bits}; supported: 4 (grouped) and 8 (per channel)")
    fmt = weight_format(format)
    K, N = w.shape
    if fmt != "int":
        return _quantize_fp8(w, bits, group_size, fmt, scale_dtype)
    group_size = _check_group(K, bits, 128 if group_size is None else group_size)
    wf = w.astype(np.float32).reshape(K // group_size, group_size, N)
    top = (1 << bits) - 1
    if symmetric:
        zero = SYMMETRIC_ZERO[bits]
        amax = np.abs(wf).max(axis=1)
        scales = (amax / (top - zero)).astype(np.float16)       # codes -zero .. top-zero around 0
        z = np.full(scales.shape, zero, np.float32)
    else:
        lo, hi = np.minimum(wf.min(axis=1), 0), np.maximum(wf.max(axis=1), 0)
        scales = ((hi - lo) / top).astype(np.float16)
        z = None
    s = scales.astype(np.float32)
    safe = np.where(s == 0, 1, s)
    if z is None:
        z = np.clip(np.round(-lo / safe), 0, top)
    q = np.clip(np.round(wf / safe[:, None, :]) + z[:, None, :], 0, top).astype(np.uint32).reshape(K, N)
    return pack_codes(q, bits), scales, (None if symmetric else z.astype(np.float16))


def _quantize_fp8(w, bits: int, group_size, fmt: str, scale_dtype):
    name, _, _, top = FP8_FORMATS[fmt]
    if bits != 8:
        raise UsageError(f"quantize_weights: format={fmt!r} codes are bytes: bits must be 8, got {bits}")
    if np.dtype(scale_dtype) not in (np.float16, np.float32):
        raise UsageError(f"quantize_weights: scale_dtype must be float16 or float32, got {np.dtype(scale_dtype)}")
    K, N = w.shape
    group = K if group_size is None else _check_group(K, 4, group_size)
    wf = w.astype(np.float32).reshape(K // group, group, N)
    scales = (np.abs(wf).max(axis=1) / np.float32(top)).astype(scale_dtype)
    s = scales.astype(np.float32)
    scaled = np.clip(wf / np.where(s == 0, 1, s)[:, None, :], -top, top).reshape(K, N)
    codes = scaled.astype(getattr(ml_dtypes, name)).view(np.uint8).astype(np.uint32)
    return pack_codes(codes, bits), scales, None


def pack_codes(q: np.ndarray, bits: int) -> np.ndarray:
    """The int32 ``w_packed`` of unsigned codes ``q`` [K, N] (module docstring's layout)."""
    K, N = q.shape
    block, fields = BLOCK_K[bits], 32 // bits
    kp = -(-K // block) * block
    padded = np.zeros((kp, N), np.uint32)
    padded[:K] = q
    by_field = padded.reshape(kp // block, fields, FIELD_ROWS, N)        # [block, t, p, n]
    words = np.zeros((kp // block, FIELD_ROWS, N), np.uint32)
    for t in range(fields):
        words |= by_field[:, t] << np.uint32(bits * t)
    return words.reshape(-1, N).view(np.int32)


def unpack_codes(w_packed: np.ndarray, bits: int, K: int) -> np.ndarray:
    """The unsigned codes [K, N] of ``w_packed`` (the inverse of :func:`pack_codes`)."""
    words = np.asarray(w_packed).view(np.uint32)
    fields = 32 // bits
    words = words.reshape(-1, FIELD_ROWS, words.shape[1])
    codes = np.stack([(words >> np.uint32(bits * t)) & np.uint32((1 << bits) - 1) for t in range(fields)], axis=1)
    return codes.reshape(-1, words.shape[2])[:K]


def dequantize(w_packed, scales, zeros, bits: int, K: int, group_size: int = 128, dtype=np.float16,
               format: str = "int") -> np.ndarray:
    """The weights [K, N] :func:`matmul_wq` multiplies x by, for x of ``dtype``, in that
    dtype: f16 ``q * s - f16(z * s)`` rounded once (the kernel's fma: q * s and the
    difference are exact in f32, codes and zero points being integers below 256), bf16
    ``(q - z) * s`` (exact in f32) rounded once; fp8 ``dtype(f32(fp8(q) * s))`` (module
    docstring), ``group_size`` then read from the scales' rows."""
    fmt = weight_format(format)
    if fmt != "int":
        codes = unpack_codes(w_packed, bits, K).astype(np.uint8).view(getattr(ml_dtypes, FP8_FORMATS[fmt][0]))
        s = np.asarray(scales)
        rows = np.arange(K) // -(-K // s.shape[0])
        return (codes.astype(np.float64) * s.astype(np.float64)[rows]).astype(np.float32).astype(dtype)
    group_size = K if bits == 8 else group_size
    q = unpack_codes(w_packed, bits, K).astype(np.float32)
    rows = np.arange(K) // group_size
    s = np.asarray(scales, np.float32)
    z = np.full(s.shape, SYMMETRIC_ZERO[bits], np.float32) if zeros is None else np.asarray(zeros, np.float32)
    if np.dtype(dtype) == np.float16:
        exact = q * s[rows] - (z * s).astype(np.float16).astype(np.float32)[rows]
    else:
        exact = (q - z[rows]) * s[rows]
    return exact.astype(dtype)


@xd.jit
def matmul_wq_kernel(x, w, s, z, c, KP, N, BITS: xt.constexpr, GROUP: xt.constexpr, HAS_Z: xt.constexpr,
                     ZERO: xt.constexpr, IN: xt.constexpr, OUT: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr,
                     FP8: xt.constexpr):
    """c[M, N] = x[M, K] @ dequant(w): per block of 32 packed rows, each field's 32 x BN
    slice is shifted out, converted, dequantised ((q - zero) * scale, one rounding to IN)
    and multiplied with the matching 32 columns of x on DPAS (f32 accumulation).
    ``FP8``: 0 for integer codes, else the fp8 format's mantissa bits (3: e4m3fn, 2:
    e5m2), the codes decoded as the module docstring says."""
    m0 = xt.program_id(0) * BM
    n0 = xt.program_id(1) * BN
    acc = xt.zeros([BM, BN], xt.float32)
    tw = xt.init_tile(w, [0, n0], [32, BN])
    for b in range(0, KP, 32 * (32 // BITS)):
        q = xt.load_tile(tw)
        for t in xt.static_range(32 // BITS):
            k0 = b + t * 32
            if (t * 32) % GROUP == 0:     # a new group starts in this field (else GROUP > block)
                # s, z: the [groups, N] rows flattened (1-D tiles are 2D block reads)
                sc = xt.load_tile(xt.init_tile(s, [k0 // GROUP * N + n0], [BN]))
                if FP8 == 3:        # the scale times e4m3's unit 2^-9 (exact in f32)
                    su = xt.astype(sc, xt.float32) * 0.001953125
                elif FP8 == 2:      # e5m2's unit 2^-16
                    su = xt.astype(sc, xt.float32) * 0.0000152587890625
                else:
                    if HAS_Z:
                        zz = xt.load_tile(xt.init_tile(z, [k0 // GROUP * N + n0], [BN]))
                    else:
                        zz = xt.full([BN], ZERO, xt.float16)
                    if IN == xt.float16:
                        zs = zz * sc            # zero * scale, rounded to f16 once per group
                    else:
                        zs = xt.astype(zz, xt.float32) * xt.astype(sc, xt.float32)   # exact in f32
                        sf = xt.astype(sc, xt.float32)
            code = (q >> (BITS * t)) & ((1 << BITS) - 1)
            if FP8 != 0:
                # |v| / unit = mant << e1 exactly: e1 = max(exponent - 1, 0), mant the
                # significand with its implicit bit (none for subnormal codes)
                mag = code & 127
                e1 = xt.maximum((mag >> FP8) - 1, 0)
                mant = mag - (e1 << FP8)
                mant = xt.where(code > 127, -mant, mant)
                if FP8 == 3:        # e4m3: |mant << e1| < 2^18
                    f = xt.astype(mant << e1, xt.float32)
                else:               # e5m2: e1 up to 29, the power of two apart (both exact)
                    f = xt.astype(mant, xt.float32) * xt.astype(1 << e1, xt.float32)
                wt = xt.astype(f * su, IN)
            elif IN == xt.float16:    # q * scale - zs: exact before the one rounding (see dequantize)
                wt = xt.fma(xt.astype(code, xt.float16), sc, -zs)
            else:                   # bf16: (q - zero) * scale is exact in f32, then one rounding
                wt = xt.astype(xt.fma(xt.astype(code, xt.float32), sf, -zs), IN)
            acc = xt.tile_mma(xt.load_tile(xt.init_tile(x, [m0, k0], [BM, 32])), wt, acc)
        tw = xt.update_tile_offset(tw, 32, 0)
    xt.store_tile(xt.astype(acc, OUT), xt.init_tile(c, [m0, n0], [BM, BN]))


def matmul_wq(x, w_packed, scales, zeros=None, bits: int = 4, group_size: int = 128, out=None,
              target: str | None = None, format: str = "int"):
    """``x @ dequant(w)`` for x [M, K] f16/bf16 and the ``(w_packed, scales, zeros)`` of
    :func:`quantize_weights` (``zeros=None``: symmetric codes); the result [M, N] has x's
    dtype (f32 accumulation, one rounding).  K is x's column count; ``bits=4`` needs K a
    multiple of ``group_size`` (a power of two >= 32), ``bits=8`` reads one scale row.
    Arrays: numpy (result numpy), dpnp/USM or torch XPU as for :func:`~.matmul.matmul`.

    Example::

        rng = np.random.default_rng(0)
        w = rng.standard_normal((256, 64)).astype(np.float16)
        x = rng.standard_normal((3, 256)).astype(np.float16)
        y = ops.matmul_wq(x, *ops.quantize_weights(w), target="interpret")
        assert y.shape == (3, 64) and y.dtype == np.float16
        y8 = ops.matmul_wq(x, *ops.quantize_weights(w, bits=8, format="e4m3"), bits=8, format="e4m3",
                           target="interpret")                          # fp8 weights, per channel

    ``format="e4m3"`` / ``"e5m2"`` (``bits=8``): fp8 weights from ``quantize_weights``
    with the same ``format``; ``zeros`` must be None; scales f16 or f32, [1, N] (per
    output channel, ``group_size`` then unused) or [K / group_size, N].
    """
    x, w_packed, scales = (operands.as_array(v, n) for v, n in ((x, "x"), (w_packed, "w_packed"), (scales, "scales")))
    fmt = weight_format(format)
    M, K, N, in_name = _check(x, w_packed, scales, zeros, bits, group_size, fmt)
    target = configs.resolve_target(target, x)
    BM, BN = configs.wq_tiles(target, M)
    buffer, result = operands.output_buffer(out, x, (M, N), operands.dtype_of(x))
    if M == 0 or N == 0:
        return result
    group = K if bits == 8 else group_size
    if fmt != "int" and int(scales.shape[0]) > 1:
        group = group_size
    z = zeros if zeros is not None else scales      # a placeholder array when symmetric
    grid = (-(-M // BM), -(-N // BN))
    matmul_wq_kernel.on(target)[grid](
        operands.fit_rows(x, "x"), operands.fit_rows(w_packed, "w_packed"), _flat(scales, "scales"),
        _flat(operands.as_array(z, "zeros"), "zeros"), buffer, int(w_packed.shape[0]) * 32 // bits, N,
        BITS=bits, GROUP=_block_group(group, bits, K), HAS_Z=zeros is not None, ZERO=SYMMETRIC_ZERO[bits],
        IN=XT_DTYPES[in_name], OUT=XT_DTYPES[in_name], BM=BM, BN=BN,
        FP8=FP8_FORMATS[fmt][1] if fmt != "int" else 0)
    return operands.copy_back(buffer, result)


def matmul_wq_result(x, w_packed, scales, zeros=None, bits: int = 4, group_size: int = 128, format: str = "int"):
    """(shape, dtype) of what :func:`matmul_wq` returns, checked as it checks (the same
    UsageErrors), running nothing: the torch fake implementation traces with it."""
    M, _, N, in_name = _check(x, w_packed, scales, zeros, bits, group_size, weight_format(format))
    return (M, N), np.dtype(operands.BF16 if in_name == "bfloat16" else in_name)


def _flat(v, name: str):
    """``v`` [groups, N] as the 1-D array the kernel reads (padded to the 2D-block width)."""
    return operands.fit_rows(v.reshape(1, -1), name).reshape(-1)


def _block_group(group: int, bits: int, K: int) -> int:
    """The kernel's GROUP: the group size, or (one group: int8, fp8 per channel) a
    multiple of the block that no K reaches, so only field 0 of block 0 loads the scale
    row."""
    return 1 << 30 if group >= K else group


def _check_group(K: int, bits: int, group_size: int) -> int:
    if bits == 8:
        return K
    if group_size < 32 or group_size & (group_size - 1):
        raise UsageError(f"group_size={group_size}: int4 groups must be a power of two >= 32 (e.g. 32, 64, 128)")
    if K % group_size:
        raise UsageError(f"K = {K} is not a multiple of group_size = {group_size}: pad the weight's K "
                         f"(and x's columns) with zeros to {-(-K // group_size) * group_size}")
    return group_size


def _check(x, w_packed, scales, zeros, bits: int, group_size: int, fmt: str = "int"):
    if bits not in BLOCK_K:
        raise UsageError(f"matmul_wq: bits={bits}; supported: 4 and 8")
    if fmt != "int":
        return _check_fp8(x, w_packed, scales, zeros, bits, group_size, fmt)
    if x.ndim != 2:
        raise UsageError(f"matmul_wq: x must be 2-D [M, K], got shape {tuple(x.shape)}")
    M, K = (int(v) for v in x.shape)
    dx = operands.dtype_of(x)
    if dx not in (np.float16, operands.BF16):
        raise UsageError(f"matmul_wq: x must be float16 or bfloat16, got {dx}")
    _check_group(K, bits, group_size)
    rows = -(-K // BLOCK_K[bits]) * BLOCK_K[bits] * bits // 32
    if w_packed.ndim != 2 or int(w_packed.shape[0]) != rows or operands.dtype_of(w_packed) != np.int32:
        raise UsageError(f"matmul_wq: w_packed must be int32 [{rows}, N] for K = {K} and bits = {bits} "
                         f"(quantize_weights' layout), got {operands.dtype_of(w_packed)} {tuple(w_packed.shape)}")
    N = int(w_packed.shape[1])
    groups = 1 if bits == 8 else K // group_size
    for name, v in (("scales", scales), ("zeros", zeros)):
        if v is not None and (tuple(v.shape) != (groups, N) or operands.dtype_of(v) != np.float16):
            raise UsageError(f"matmul_wq: {name} must be float16 [{groups}, {N}] (one row per group of "
                             f"{K if bits == 8 else group_size} rows of K), got {operands.dtype_of(v)} "
                             f"{tuple(v.shape)}")
    return M, K, N, "float16" if dx == np.float16 else "bfloat16"


def _check_x(x, op: str = "matmul_wq"):
    if x.ndim != 2:
        raise UsageError(f"{op}: x must be 2-D [M, K], got shape {tuple(x.shape)}")
    dx = operands.dtype_of(x)
    if dx not in (np.float16, operands.BF16):
        raise UsageError(f"{op}: x must be float16 or bfloat16, got {dx}")
    return (*(int(v) for v in x.shape), "float16" if dx == np.float16 else "bfloat16")


def _check_fp8(x, w_packed, scales, zeros, bits: int, group_size: int, fmt: str):
    if zeros is not None:
        raise UsageError(f"matmul_wq: format={fmt!r} takes no zeros: fp8 weights are symmetric (a zero point "
                         f"would shift a floating-point code, which has its own sign); pass zeros=None")
    if bits != 8:
        raise UsageError(f"matmul_wq: format={fmt!r} codes are bytes: bits must be 8, got {bits}")
    M, K, in_name = _check_x(x)
    rows = -(-K // BLOCK_K[8]) * FIELD_ROWS
    if w_packed.ndim != 2 or int(w_packed.shape[0]) != rows or operands.dtype_of(w_packed) != np.int32:
        raise UsageError(f"matmul_wq: w_packed must be int32 [{rows}, N] for K = {K} and bits = 8 "
                         f"(quantize_weights' layout), got {operands.dtype_of(w_packed)} {tuple(w_packed.shape)}")
    N = int(w_packed.shape[1])
    groups = int(scales.shape[0]) if scales.ndim == 2 else 0
    if groups > 1:
        _check_group(K, 4, group_size)
    if (scales.ndim != 2 or int(scales.shape[1]) != N or groups not in (1, K // group_size)
            or operands.dtype_of(scales) not in (np.float16, np.float32)):
        raise UsageError(f"matmul_wq: fp8 scales must be float16 or float32 [1, {N}] (per output channel) or "
                         f"[{K // group_size if K % group_size == 0 else 'K / group_size'}, {N}] (groups of "
                         f"group_size = {group_size} rows of K), got {operands.dtype_of(scales)} "
                         f"{tuple(scales.shape)}")
    return M, K, N, in_name
