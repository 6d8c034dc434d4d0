"""bspcrawl: a bulk-synchronous parallel web crawler on MPI."""

import os

__version__ = "0.2.0"

# No OpenBLAS thread pool (set before numpy is first imported; a program that imported it
# already keeps its own): ranks are the parallelism, bspcrawl multiplies no float
# matrices, and the pool's idle threads spin on the CPU in every process.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
