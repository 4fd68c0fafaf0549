"""The element atomics and the fence: valid forms round-trip, invalid ones are refused
with a message that says what is legal; the tile atomic's sem/scope survive a round trip."""
from __future__ import annotations

import pytest
from xdsl.utils.exceptions import ParseError, VerifyException

from xetile_dsl.dialects import parse_module

from .helpers import roundtrip, wrap

T = "!xetile.tile<8x16xf32>"
ARGS = "%m: memref<?x?xi32>, %f: memref<?x?xf32>, %i: index, %j: index, %v: i32, %w: f32, %t: " + T + \
    ", %tv: vector<8x16xf32>, %ti: !xetile.tile<8x16xi32>, %vi: vector<8x16xi32>, " \
    "%d: !xegpu.tensor_desc<16xi32, #xegpu.scatter_tdesc_attr<>>, %k: vector<16xi1>, %l: vector<16xi32>"

VALID = {
    "rmw scalar": "%r = xetile.atomic_rmw_scalar \"addi\" %v, %m[%i, %j] : i32, memref<?x?xi32> -> i32",
    "rmw scalar ordered": "%r = xetile.atomic_rmw_scalar \"xori\" %v, %m[%i, %j] {sem = \"release\", "
                          "scope = \"workgroup\"} : i32, memref<?x?xi32> -> i32",
    "rmw scalar float": "%r = xetile.atomic_rmw_scalar \"addf\" %w, %f[%i, %j] : f32, memref<?x?xf32> -> f32",
    "cas scalar": "%r = xetile.atomic_cas_scalar %m[%i, %j], %v, %v {sem = \"acquire\"} : memref<?x?xi32>, i32, i32 "
                  "-> i32",
    "fence": "xetile.fence {sem = \"release\", scope = \"workgroup\"}",
    "fence default": "xetile.fence",
    "tile atomic ordered": f"%r = xetile.atomic_rmw addf %tv, %t {{sem = \"relaxed\", scope = \"workgroup\"}} : "
                           f"vector<8x16xf32>, {T} -> vector<8x16xf32>",
    "tile cas": "%r = xetile.atomic_rmw cmpxchg %vi, %ti, %vi {sem = \"acquire\"} : vector<8x16xi32>, "
                "!xetile.tile<8x16xi32>, vector<8x16xi32> -> vector<8x16xi32>",
    "xegpu cas": "%r = xegpu.atomic_rmw cmpxchg %l, %d, %k, %l : vector<16xi32>, !xegpu.tensor_desc<16xi32, "
                 "#xegpu.scatter_tdesc_attr<>>, vector<16xi1>, vector<16xi32> -> vector<16xi32>",
}

INVALID = {
    "bad sem": ("xetile.fence {sem = \"seq_cst\"}", "is not one of relaxed, acquire, release, acq_rel"),
    "bad scope": ("%r = xetile.atomic_rmw_scalar \"addi\" %v, %m[%i, %j] {scope = \"system\"} : i32, "
                  "memref<?x?xi32> -> i32", "is not one of workgroup, device"),
    "relaxed fence": ("xetile.fence {sem = \"relaxed\"}", "a relaxed fence orders nothing"),
    "index count": ("%r = xetile.atomic_rmw_scalar \"addi\" %v, %m[%i] : i32, memref<?x?xi32> -> i32",
                    "give one per dimension"),
    "cas float": ("%r = xetile.atomic_cas_scalar %f[%i, %j], %w, %w : memref<?x?xf32>, f32, f32 -> f32",
                  "compare-exchange is on 32/64-bit integers"),
    "kind": ("%r = xetile.atomic_rmw_scalar \"nand\" %v, %m[%i, %j] : i32, memref<?x?xi32> -> i32", "unknown kind"),
    "tile sem": (f"%r = xetile.atomic_rmw addf %tv, %t {{sem = \"sometimes\"}} : vector<8x16xf32>, {T} -> "
                 "vector<8x16xf32>", "is not one of"),
    "tile cas float": (f"%r = xetile.atomic_rmw cmpxchg %tv, %t, %tv : vector<8x16xf32>, {T}, vector<8x16xf32> -> "
                       "vector<8x16xf32>", "cmpxchg compares 32/64-bit integers"),
    "tile cas without cmp": ("%r = xetile.atomic_rmw cmpxchg %vi, %ti : vector<8x16xi32>, !xetile.tile<8x16xi32> -> "
                             "vector<8x16xi32>", "expected a value, a tile"),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_roundtrip(name: str) -> None:
    roundtrip(wrap(ARGS, "  " + VALID[name]))


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid(name: str) -> None:
    text, message = INVALID[name]
    with pytest.raises((VerifyException, ParseError)) as info:
        parse_module(wrap(ARGS, "  " + text)).verify()
    assert message in str(info.value), str(info.value)
