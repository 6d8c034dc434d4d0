"""bspcrawl: a bulk-synchronous parallel web crawler on MPI."""

__version__ = "0.2.0"
