"""IR rewrite helpers that several passes call (none is a pass): the 1:N function rebuilder
(``rebuild.py``), dead code (``dead_code.py``), non-splat constants (``constants.py``),
coalesced 2D block messages (``block_messages.py``), scattered tiles (``scattered.py``),
``order = [0, 1]`` tiles read with transposed loads (``transposed_tiles.py``), the
subgroup transpose in registers by lane shuffles (``register_transpose.py``) and the
chained tile_mma re-layout (``mma_relayout.py``).  Each module holds the rules of one
construct for every pass that lowers it; a helper only one pass uses lives with that
pass (``passes/wg_to_sg/``).
"""
