"""Every RFC snippet meant to be valid (corrected as listed in docs/ir.md) parses,
verifies, and round-trips."""
from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import roundtrip

SNIPPETS = sorted((Path(__file__).parent / "rfc_snippets").glob("*.mlir"))


@pytest.mark.parametrize("path", SNIPPETS, ids=lambda p: p.name)
def test_rfc_snippet(path: Path) -> None:
    roundtrip(path.read_text())
