"""The names of the discardable attributes the stages leave on the IR for later stages.

A stage that marks an op or a function and a later stage (or the interpreter) that reads
the mark share the name from here, so neither imports the other for it:

* on the kernel function: :data:`KERNEL_ATTR` (the frontend: the target name a saved
  module was built for), :data:`NUM_SUBGROUPS_ATTR` (xetile-wg-to-sg: subgroups per
  workgroup), :data:`LARGE_GRF_ATTR` (xetile-wg-to-sg: build in the 256-GRF mode),
  :data:`REGISTER_BUDGET_ATTR` (the register budget's verdict), :data:`UNSPLIT_ATTR`
  (xetile-choose-wg-map: why a kernel without wg_map was not split among subgroups, for
  xetile-one-working-subgroup's warning);
* on ops: :data:`LANE_ROWS_ATTR` (a transposed ``load_nd`` the target reads as per-lane
  rows) and :data:`ROTATION_BUFFER_ATTR` (a load xegpu-rotate-loads gave a fragment buffer).
"""
from __future__ import annotations

from ..targets.catalog import KERNEL_ATTR  # noqa: F401 - the targets read it without the dialects

NUM_SUBGROUPS_ATTR = "xetile.num_subgroups"
LARGE_GRF_ATTR = "xetile.large_grf"
UNSPLIT_ATTR = "xetile.unsplit"
REGISTER_BUDGET_ATTR = "xetile.register_budget"
LANE_ROWS_ATTR = "xetile.lane_rows"
ROTATION_BUFFER_ATTR = "xetile.rotation_buffer"
