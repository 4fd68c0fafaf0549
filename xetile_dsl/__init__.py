"""xetile_dsl: Intel GPU tile kernels from Python."""
