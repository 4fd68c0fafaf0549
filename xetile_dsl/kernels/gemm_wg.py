"""Workgroup-level GEMMs from the XeTile RFC's Appendix 2, written in the DSL.

Each workgroup computes a 256x256 tile of C with 32 subgroups in an [8, 4] layout
(the RFC's wg_map values); the kernel runs with 32 x subgroup-size work items per
workgroup and ``program_id`` numbering workgroups.
"""
import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.interpreter import interpret_requested
from xetile_dsl.jit import default_target
from xetile_dsl.runtime.devices import get_device
from xetile_dsl.targets import TARGETS, GemmTile, get_target

# Appendix 2.1, "Simple Gemm with prefetch"
MP_A = xt.wg_map(sg_layout=[8, 4], sg_data=[32, 32])
MP_A_PFH = xt.wg_map(sg_layout=[32, 1], sg_data=[8, 32])
MP_B = xt.wg_map(sg_layout=[8, 4], sg_data=[32, 64])
MP_B_PFH = xt.wg_map(sg_layout=[4, 8], sg_data=[8, 32])
MP_C = xt.wg_map(sg_layout=[8, 4], sg_data=[32, 64])


@xd.jit
def gemm_prefetch_kernel(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, PF: xt.constexpr):
    """RFC Appendix 2.1: C = A @ B; A and B are loaded with the mma maps and prefetched
    ``PF`` K-steps ahead with the cooperative maps (each subgroup prefetches its slice)."""
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    ta = xt.init_tile(a, [m, 0], [BM, BK], wg_map=MP_A)
    tb = xt.init_tile(b, [0, n], [BK, BN], wg_map=MP_B)
    pa = xt.init_tile(a, [m, PF * BK], [BM, BK], wg_map=MP_A_PFH)
    pb = xt.init_tile(b, [PF * BK, n], [BK, BN], wg_map=MP_B_PFH)
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        va = xt.load_tile(ta)
        vb = xt.load_tile(tb)
        xt.prefetch_tile(pa)
        xt.prefetch_tile(pb)
        acc = xt.tile_mma(va, vb, acc, wg_map=MP_C)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
        pa = xt.update_tile_offset(pa, 0, BK)
        pb = xt.update_tile_offset(pb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN], wg_map=MP_C))


def gemm_prefetch(a, b, c=None, target=None):
    """``a @ b`` in f32 with the Appendix 2.1 kernel (256x256 workgroup tiles)."""
    (M, K), N = a.shape, b.shape[1]
    if c is None:
        c = np.zeros((M, N), np.float32)
    launcher = gemm_prefetch_kernel.on(target) if target else gemm_prefetch_kernel
    launcher[((M + 255) // 256, (N + 255) // 256)](a, b, c, K, BM=256, BN=256, BK=32, PF=3)
    return c


@xd.jit
def gemm_wg_kernel(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, SM: xt.constexpr,
                   SN: xt.constexpr, PF: xt.constexpr, ACC: xt.constexpr):
    """The Appendix 2.1 GEMM with its maps derived from the tile sizes: ``SM x SN``
    subgroups each compute a ``BM/SM x BN/SN`` piece of the ``BM x BN`` C tile and load
    whole-K slices of A and B; A and B are prefetched ``PF`` K-steps ahead with the
    RFC's cooperative maps (A split by rows among all subgroups, B by rows and into
    64-byte column pieces, the RFC's ``[4, 8]`` x ``[8, 32]`` for f16: one 2D block
    prefetch per subgroup).  ``ACC`` is the accumulator dtype: ``xt.int32`` for int8/uint8 inputs,
    ``xt.float32`` for f16, bf16 and f32 (tf32 DPAS, PVC only).  It is
    :func:`gemm_wg_layout_kernel` with both operands row-major."""
    gemm_wg_layout_kernel(a, b, c, K, BM, BN, BK, SM, SN, PF, ACC, False, False)


@xd.jit
def gemm_wg_layout_kernel(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, SM: xt.constexpr,
                          SN: xt.constexpr, PF: xt.constexpr, ACC: xt.constexpr, TA: xt.constexpr,
                          TB: xt.constexpr):
    """``gemm_wg_kernel`` with ``a`` holding A^T ([K, M] row-major) when ``TA`` and ``b``
    holding B^T ([N, K]) when ``TB``: the mma tiles are ``order=(0, 1)`` views with
    gemm_wg's maps, and each stored array is prefetched in its own row-major layout,
    ``PF`` K steps ahead, split among all subgroups in one-message pieces."""
    NS = SM * SN
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    mp_a = xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BK])
    mp_b = xt.wg_map(sg_layout=[SM, SN], sg_data=[BK, BN // SN])
    if TA:
        ta = xt.init_tile(a, [m, 0], [BM, BK], order=(0, 1), wg_map=mp_a)
    else:
        ta = xt.init_tile(a, [m, 0], [BM, BK], wg_map=mp_a)
    if TB:
        tb = xt.init_tile(b, [0, n], [BK, BN], order=(0, 1), wg_map=mp_b)
    else:
        tb = xt.init_tile(b, [0, n], [BK, BN], wg_map=mp_b)
    # a prefetched slice is dealt to the NS subgroups in pieces of at most PW elements of a
    # row (64 bytes: the widest 2D block prefetch), so each piece is one message; a slice
    # stored K-major ([BK, BM] of A^T, [BK, BN] of B) is split both ways
    PW = 512 // b.dtype.bits
    if TA:
        CA = min(max(BM // PW, 1), NS)
        pa = xt.init_tile(a, [PF * BK, m], [BK, BM],
                          wg_map=xt.wg_map(sg_layout=[NS // CA, CA], sg_data=[BK // (NS // CA), BM // CA]))
    else:
        pa = xt.init_tile(a, [m, PF * BK], [BM, BK], wg_map=xt.wg_map(sg_layout=[NS, 1], sg_data=[BM // NS, BK]))
    if TB:
        pb = xt.init_tile(b, [n, PF * BK], [BN, BK], wg_map=xt.wg_map(sg_layout=[NS, 1], sg_data=[BN // NS, BK]))
    else:
        CB = min(max(BN // PW, 1), NS)
        pb = xt.init_tile(b, [PF * BK, n], [BK, BN],
                          wg_map=xt.wg_map(sg_layout=[NS // CB, CB], sg_data=[BK // (NS // CB), BN // CB]))
    mp_c = xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BN // SN])
    acc = xt.zeros([BM, BN], ACC)
    for k in range(0, K, BK):
        va = xt.load_tile(ta)
        vb = xt.load_tile(tb)
        xt.prefetch_tile(pa)
        xt.prefetch_tile(pb)
        acc = xt.tile_mma(va, vb, acc, wg_map=mp_c)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
        if TA:
            pa = xt.update_tile_offset(pa, BK, 0)
        else:
            pa = xt.update_tile_offset(pa, 0, BK)
        if TB:
            pb = xt.update_tile_offset(pb, 0, BK)
        else:
            pb = xt.update_tile_offset(pb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN], wg_map=mp_c))


def dpas_k(target: str | None, elem: str) -> int:
    """The DPAS K block (elements) of input type ``elem`` ("f16", "i8", "f32") on a GPU
    ``target``; the CPU device and the interpreter emulate PVC."""
    gpu = get_target(target if target in TARGETS else "pvc")
    config = gpu.dpas_for(elem, elem)
    if config is None:
        raise ValueError(f"{gpu.name} has no DPAS for {elem} inputs")
    return config.k

#: the recommended ARC (dg2) f16/bf16 configuration of :func:`gemm_wg_kernel`: 32x32 f32
#: per subgroup (128 of ARC's 256 GRFs) and a K step of two DPAS K blocks (BK 32).  The
#: loop computes C^T = B^T.A^T, each lane reading runs of a row of A or B with one
#: 256-byte vector load: 16 per 32 DPAS in bounds, 28 with the edge loops (row block
#: reads were 64 + 24).  The accumulator and the K step's A and B (8 KiB) fill the register
#: file, which ARC's ``coalesced_register_share`` allows (loads are sunk to their DPAS).
#: Measured with ocloc dg2-g10: 0 spill, one K loop (docs/decisions/016-transposes.md).  Larger
#: pieces split the K loop (16x64) or spill (BK 64).
ARC_TILES = {**TARGETS["arc"].gemm_tiles[0].constants(), "BK": TARGETS["arc"].gemm_tiles[0].bk(dpas_k("arc", "f16"))}

#: accumulator (and C) dtype per input dtype of :func:`gemm_wg`
WG_ACC = {"f16": "f32", "bf16": "f32", "f32": "f32", "i8": "i32", "u8": "i32"}


#: the tile of the CPU device and the interpreter (the GPU flavours emulated): small, so
#: that a CPU run stays quick
EMULATED_TILE = GemmTile(64, 64, 4, 2, 2)


def gemm_tile_for(target: str | None) -> GemmTile:
    """The recommended workgroup tile for a launch ``target`` (None: the default device's):
    the first of the GPU target's ``gemm_tiles``, :data:`EMULATED_TILE` on the CPU device
    and in the interpreter."""
    if target is None:
        target = "interpret" if interpret_requested() else default_target(get_device())
    return TARGETS[target].gemm_tiles[0] if target in TARGETS else EMULATED_TILE


def gemm_wg_configs(target: str, elem: str | None = None) -> list[xd.Config]:
    """Autotuning candidates of :func:`gemm_wg_kernel` for a GPU ``target``: its
    ``gemm_tiles``, the recommended one first (``@xd.autotune(configs=gemm_wg_configs("bmg"),
    ...)``; README, "GEMMs per target").  With the input type ``elem`` ("f16", "i8",
    "f32") each config also sets its K step ``BK``."""
    tiles = get_target(target).gemm_tiles
    if elem is None:
        return [xd.Config(tile.constants()) for tile in tiles]
    return [xd.Config({**tile.constants(), "BK": tile.bk(dpas_k(target, elem))}) for tile in tiles]


def gemm_wg(a, b, c=None, target=None, BM=None, BN=None, BK=None, SM=None, SN=None, PF=None):
    """``a @ b`` with :func:`gemm_wg_kernel`: f16/bf16 and f32 (tf32, PVC only) give f32,
    int8/uint8 give exact i32.  Tile values not given come from :func:`gemm_tile_for`
    (per target); ``BK`` defaults to the tile's ``k_blocks`` DPAS K blocks of the input type
    (two)."""
    (M, K), N = a.shape, b.shape[1]
    elem = {1: "i8", 2: "f16", 4: "f32"}[a.dtype.itemsize]
    acc = WG_ACC[elem]
    if c is None:
        c = np.zeros((M, N), np.int32 if acc == "i32" else np.float32)
    given = {"BM": BM, "BN": BN, "SM": SM, "SN": SN, "PF": PF}
    tile = {**gemm_tile_for(target).constants(), **{k: v for k, v in given.items() if v is not None}}
    if BK is None:
        BK = gemm_tile_for(target).bk(dpas_k(target, elem))
    launcher = gemm_wg_kernel.on(target) if target else gemm_wg_kernel
    launcher[((M + tile["BM"] - 1) // tile["BM"], (N + tile["BN"] - 1) // tile["BN"])](
        a, b, c, K, BK=BK, ACC=xt.int32 if acc == "i32" else xt.float32, **tile)
    return c
