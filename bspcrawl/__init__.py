"""bspcrawl: a bulk-synchronous parallel web crawler on MPI."""

import os

__version__ = "0.2.0"

# No OpenBLAS thread pool (set before numpy is first imported; a program that imported it
# already keeps its own): ranks are the parallelism, bspcrawl multiplies no float
# matrices, and the pool's idle threads spun for 0.11 CPU-s in every process (a tenth of
# a second per rank of each crawl; docs/performance/realweb.md, 2026-11-26).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
