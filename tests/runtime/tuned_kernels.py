"""A GEMM under @autotune, for the autotuner tests (also run in subprocesses)."""
import xetile_dsl as xd
from xetile_dsl.kernels.matmul import matmul_kernel

CONFIGS = [xd.Config({"BM": 32, "BN": 32, "BK": 32}, num_subgroups=1),
           xd.Config({"BM": 16, "BN": 32, "BK": 32}, num_subgroups=1),
           xd.Config({"BM": 32, "BN": 16, "BK": 64}, num_subgroups=1)]

tuned = xd.autotune(configs=CONFIGS, key=["a", "b"], warmup=1, rep=3)(matmul_kernel)


def grid(meta, m=64, n=64):
    """Grid as a function of the chosen config's meta-parameters."""
    return ((m + meta["BM"] - 1) // meta["BM"], (n + meta["BN"] - 1) // meta["BN"])
