"""bspcrawl: a bulk-synchronous parallel web crawler on MPI."""

import os

__version__ = "0.2.0"

# No OpenBLAS thread pool (before numpy's first import): ranks are the parallelism, and
# the pool's idle threads spin on the CPU in every process.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
