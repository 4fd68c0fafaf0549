"""XeTile RFC Appendix 2.4 in its literal form: a GEMM whose A and B K-slices are loaded
cooperatively from global memory (every subgroup a distinct band, no duplicate loads),
stored into a ring of ``RING`` K-slices in user-allocated shared local memory, and read
back from SLM with the mma maps. Three slices are in flight ahead of the multiply.

The maps are the RFC's: 64 subgroups, ``mp_a``/``mp_b``/``mp_c`` [8, 8] x [32, 32]
(a 256x256 workgroup tile), ``mp_a_cop`` [64, 1] x [4, 32] on the 256x32 A slices and
``mp_b_cop`` [8, 8] x [4, 32] on the 32x256 B slices. The two rings take
``RING * (256x32 + 32x256)`` f16 = 128 KiB of SLM with ``RING = 4``: all of PVC's SLM.
"""
from __future__ import annotations

import xetile_dsl as xd
import xetile_dsl.language as xt

MP_A = xt.wg_map(sg_layout=[8, 8], sg_data=[32, 32])
MP_A_COP = xt.wg_map(sg_layout=[64, 1], sg_data=[4, 32])
MP_B = xt.wg_map(sg_layout=[8, 8], sg_data=[32, 32])
MP_B_COP = xt.wg_map(sg_layout=[8, 8], sg_data=[4, 32])
MP_C = xt.wg_map(sg_layout=[8, 8], sg_data=[32, 32])

BM = 256  #: workgroup tile rows (the RFC's)
BN = 256  #: workgroup tile columns
BK = 32   #: one K slice
RING = 4  #: K slices per SLM ring (the RFC's: 3 ahead + the one being multiplied)


@xd.jit
def gemm_slm_ring_kernel(a, b, c, K, RING: xt.constexpr):
    """``c = a @ b`` (f16 in, f32 out) per 256x256 workgroup tile, K a multiple of 32.
    Before the loop, slices 0 .. RING-2 go global -> SLM; in the loop, each step loads
    global slice k + RING-1 (cooperative maps), reads slice k from SLM (mma maps),
    multiplies, waits at a barrier and stores the global slice into the freed ring slot.
    One barrier per step is enough for RING >= 3 (a slot is written one barrier after its
    last read and read two barriers after its write); RING = 2 (the ring that fits
    ARC's 64 KiB) needs a second barrier after the stores."""
    m = xt.program_id(0) * 256
    n = xt.program_id(1) * 256
    ring_cols = RING * 32
    a_slm = xt.slm_alloc([256, RING * 32], xt.float16)
    b_slm = xt.slm_alloc([RING * 32, 256], xt.float16)
    a_glb = xt.init_tile(a, [m, 0], [256, 32], wg_map=MP_A_COP)
    b_glb = xt.init_tile(b, [0, n], [32, 256], wg_map=MP_B_COP)
    for s in xt.static_range(RING - 1):  # the prologue: RING-1 slices ahead
        a_r = xt.load_tile(a_glb)
        b_r = xt.load_tile(b_glb)
        xt.store_tile(a_r, xt.init_tile(a_slm, [0, s * 32], [256, 32], wg_map=MP_A_COP))
        xt.store_tile(b_r, xt.init_tile(b_slm, [s * 32, 0], [32, 256], wg_map=MP_B_COP))
        a_glb = xt.update_tile_offset(a_glb, 0, 32)
        b_glb = xt.update_tile_offset(b_glb, 32, 0)
    xt.barrier()
    a_load = xt.init_tile(a_slm, [0, 0], [256, 32], wg_map=MP_A)
    b_load = xt.init_tile(b_slm, [0, 0], [32, 256], wg_map=MP_B)
    a_store = xt.init_tile(a_slm, [0, (RING - 1) * 32], [256, 32], wg_map=MP_A_COP)
    b_store = xt.init_tile(b_slm, [(RING - 1) * 32, 0], [32, 256], wg_map=MP_B_COP)
    acc = xt.zeros([256, 256], xt.float32)
    slm_offset = 0
    for k in range(0, K, 32):
        a_next = xt.load_tile(a_glb)  # cooperative load of slice k + RING-1 from global
        b_next = xt.load_tile(b_glb)
        a_rr = xt.load_tile(a_load)   # slice k from SLM, in the mma maps
        b_rr = xt.load_tile(b_load)
        new_offset = (slm_offset + 32) % ring_cols
        store_offset = (slm_offset + (RING - 1) * 32) % ring_cols
        new_store_offset = (new_offset + (RING - 1) * 32) % ring_cols
        a_load = xt.update_tile_offset(a_load, 0, new_offset - slm_offset)
        b_load = xt.update_tile_offset(b_load, new_offset - slm_offset, 0)
        acc = xt.tile_mma(a_rr, b_rr, acc, wg_map=MP_C)
        xt.barrier()  # every subgroup has read the slot the next slice goes to
        xt.store_tile(a_next, a_store)
        xt.store_tile(b_next, b_store)
        if RING < 3:  # the slot just written is read in the next step: wait for the stores
            xt.barrier()
        a_store = xt.update_tile_offset(a_store, 0, new_store_offset - store_offset)
        b_store = xt.update_tile_offset(b_store, new_store_offset - store_offset, 0)
        a_glb = xt.update_tile_offset(a_glb, 0, 32)
        b_glb = xt.update_tile_offset(b_glb, 32, 0)
        slm_offset = new_offset
    xt.store_tile(acc, xt.init_tile(c, [m, n], [256, 256], wg_map=MP_C))


#: the RFC's map names -> maps (for tests and docs)
RFC_MAPS = {"mp_a": MP_A, "mp_a_cop": MP_A_COP, "mp_b": MP_B, "mp_b_cop": MP_B_COP, "mp_c": MP_C}


def gemm_slm_ring(a, b, c, target: str = "cpu-pvc", ring: int = RING):
    """Launch :func:`gemm_slm_ring_kernel` over ``c``'s 256x256 workgroup tiles."""
    m, k = a.shape
    n = b.shape[1]
    if m % BM or n % BN or k % BK:
        raise ValueError(f"gemm_slm_ring needs M, N multiples of 256 and K a multiple of 32, got {m}x{n}x{k}")
    gemm_slm_ring_kernel.on(target)[(m // BM, n // BN)](a, b, c, k, RING=ring)
    return c
