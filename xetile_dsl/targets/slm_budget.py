"""The one shared-local-memory rule: a workgroup's buffers (the user's ``xt.slm_alloc``
ones and every exchange the compiler adds) must fit the target's SLM together.

Every stage that places a buffer in SLM asks the kernel's :class:`SlmBudget` (the
workgroup distribution's exchanges and conversion rounds, the subgroup transposes,
codegen's buffers; the target legality check of user IR), so the rule and its message
live here once."""
from __future__ import annotations

from ..errors import LoweringError
from .target import Target


class SlmBudget:
    """SLM bytes a kernel has placed so far against ``target.slm_bytes``."""

    def __init__(self, target: Target, used: int = 0):
        self.target = target
        self.used = used

    @property
    def left(self) -> int:
        return self.target.slm_bytes - self.used

    def fits(self, nbytes: int) -> bool:
        """Whether ``nbytes`` more would still fit (nothing is taken)."""
        return nbytes <= self.left

    def reserve(self, nbytes: int) -> bool:
        """Place ``nbytes`` more; False when the total no longer fits the target's SLM."""
        self.used += nbytes
        return self.used <= self.target.slm_bytes

    def take(self, nbytes: int, op, need: str, advice: str) -> None:
        """Place ``nbytes`` more; when the total passes the target's SLM, a LoweringError
        at ``op`` naming what ``need`` s the buffer, the totals and ``advice``."""
        if not self.reserve(nbytes):
            raise LoweringError(f"{need} ({nbytes} B, {self.used} B of shared local memory in this kernel so "
                                f"far), but {self.target.name} has {self.target.slm_bytes} B per workgroup; "
                                f"{advice}", op)
