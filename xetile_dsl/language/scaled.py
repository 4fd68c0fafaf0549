"""Low-precision formats: block-scaled (OCP microscaling, "MX") products, :func:`dot_scaled`;
int4 unpacking, :func:`unpack_int4`."""
from __future__ import annotations

from .core import builtin


@builtin
def dot_scaled(a, a_scale, b, b_scale, acc=None, format="e4m3", a_format=None, b_format=None):
    """``acc + (a * 2^(a_scale - 127)) @ (b * 2^(b_scale - 127))`` in f32, one e8m0 scale per
    32 elements along K (OCP MX block scaling, Triton's ``tl.dot_scaled`` layout).

    One call is one scale block: K = 32 (loop over K in steps of 32, as the GEMM of
    ``examples/tutorial_10_block_scaled_matmul.py`` does).

    * ``format="e4m3"`` / ``"e5m2"``: ``a`` is an ``[M, 32]`` and ``b`` a ``[32, N]`` tile
      of ``xt.float8_e4m3fn`` / ``xt.float8_e5m2`` (mixed formats are accepted).
    * ``format="e2m1"`` (fp4): two codes per uint8 byte, packed along K, **low nibble
      first** (element ``2i`` of K in bits 0-3 of byte ``i``, ``2i + 1`` in bits 4-7):
      ``a`` is ``[M, 16]`` uint8 and ``b`` ``[16, N]`` uint8 (row ``i`` of ``b`` holds K
      rows ``2i`` and ``2i + 1``).
    * ``a_scale`` is ``[M, 1]`` and ``b_scale`` ``[N, 1]`` uint8 e8m0 codes (Triton's
      ``[M, K/32]`` and ``[N, K/32]`` at K = 32): the value is ``2^(s - 127)``, 255 is NaN.
    * ``acc`` is an ``[M, N]`` f32 tile or None.

    Lowering: the unscaled product of the block is one ``tile_mma`` (fp8 and fp4 convert
    exactly to f16 in registers: no target has fp8/fp4 DPAS), f32 accumulation; the scale
    ``2^(sa + sb - 254)`` is applied to that f32 block with one ``ldexp`` (exact, down to
    f32 subnormals), so no scaled operand ever exists in f16 or bf16 and nothing rounds
    but the f32 accumulation (docs/decisions/038-dot-scaled.md).

    Example::

        a = xt.load_tile(xt.init_tile(a_ptr, [m, k], [BM, 32]))          # float8_e4m3fn
        sa = xt.load_tile(xt.init_tile(a_scale_ptr, [m, k // 32], [BM, 1]))  # uint8 e8m0
        b = xt.load_tile(xt.init_tile(b_ptr, [k, n], [32, BN]))
        sb = xt.load_tile(xt.init_tile(b_scale_ptr, [n, k // 32], [BN, 1]))
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
