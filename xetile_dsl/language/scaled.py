"""Low-precision formats: block-scaled (OCP microscaling, "MX") products, :func:`dot_scaled`;
int4 unpacking, :func:`unpack_int4`."""
from __future__ import annotations

from .core import builtin


@builtin
def dot_scaled(a, a_scale, b, b_scale, acc=None, format="e4m3", a_format=None, b_format=None):
    """``acc + (a * 2^(a_scale - 127)) @ (b * 2^(b_scale - 127))`` in f32, one e8m0 scale per
    32 elements along K (OCP MX block scaling), for any K that is a multiple of 32.

    The layouts are Triton's ``tl.dot_scaled`` (checked against its ``dot_scaled``
    docstring in ``python/triton/language/core.py``: formats e2m1, e4m3, e5m2, bf16, fp16;
    fp4 packed into uint8 with the first element in the lower bits; e8m0 scales as uint8;
    its tests' ``lhs_scale [M, K/32]``, ``rhs_scale [N, K/32]``, e2m1 lhs ``[M, K/2]``):

    * ``"e4m3"`` / ``"e5m2"``: an ``[M, K]`` (``a``) or ``[K, N]`` (``b``) tile of
      ``xt.float8_e4m3fn`` / ``xt.float8_e5m2`` (either type under either name).
    * ``"e2m1"`` (fp4): two codes per uint8 byte, packed along K, **low nibble first**
      (element ``2i`` of K in bits 0-3 of byte ``i``): ``a`` is ``[M, K/2]`` and ``b``
      ``[K/2, N]`` bytes (row ``i`` of ``b`` holds K rows ``2i`` and ``2i + 1``); it pairs
      with an e2m1 operand only.
    * ``"bf16"`` / ``"fp16"``: an unscaled ``xt.bfloat16`` / ``xt.float16`` operand (its
      scale must be None); bf16 and fp16 do not mix.
    * ``format=`` names both operands; ``a_format=`` / ``b_format=`` (Triton's
      ``lhs_format`` / ``rhs_format``) override it per side.
    * ``a_scale`` is ``[M, K/32]`` and ``b_scale`` ``[N, K/32]`` (or ``[K/32, N]`` when that
      differs) uint8 e8m0 codes: ``2^(s - 127)``, 255 is NaN; None leaves that operand
      unscaled.
    * ``acc`` is an ``[M, N]`` f32 tile or None.

    Lowering: per 32-element block, one ``tile_mma`` of the codes (fp8 and fp4 convert
    exactly to f16, bf16 beside a bf16 operand: no target has fp8/fp4 DPAS) with the other
    blocks' K range selected off by constant masks, which the XeGPU lowering turns into no
    DPAS at all; the block's scale ``2^(sa + sb - 254)`` is one ``ldexp`` on its f32 result
    (exact, down to f32 subnormals), so no scaled operand exists in f16 or bf16 and only the
    f32 sums round (docs/decisions/038-dot-scaled.md, 041-dot-scaled-any-k.md).

    Example (Triton's block-scaled GEMM step, BK = 128)::

        a = xt.load_tile(xt.init_tile(a_ptr, [m, k], [BM, 128]))              # float8_e4m3fn
        sa = xt.load_tile(xt.init_tile(a_scale_ptr, [m, k // 32], [BM, 4]))   # uint8 e8m0
        b = xt.load_tile(xt.init_tile(b_ptr, [k, n], [128, BN]))
        sb = xt.load_tile(xt.init_tile(b_scale_ptr, [n, k // 32], [BN, 4]))
        acc = xt.dot_scaled(a, sa, b, sb, acc, format="e4m3")
    """


@builtin
def unpack_int4(v, signed=True, axis=1):
    """A tile of packed bytes (int8/uint8, two 4-bit values a byte, **low nibble first**)
    expanded along ``axis`` to twice its length, as int8: ``[M, K] -> [M, 2K]`` (axis 1)
    or ``[2M, N]`` (axis 0); element ``2i`` is the low nibble of byte ``i``, ``2i + 1`` the
    high one; ``signed=True`` sign-extends (-8..7), ``signed=False`` gives 0..15.

    Lowering: the two nibble tiles are interleaved by a ``tile_mma`` with constant 0/1
    interleave matrices in f16 (exact: one non-zero product per output), since tile values
    have no interleave op; it costs a DPAS of ``[M, K] x [K, 2K]`` per call.

    Example::

        w = xt.unpack_int4(xt.load_tile(xt.init_tile(packed, [0, 0], [16, 32])))  # int8 [16, 64]
    """
