"""Per-rank URL priority queues: the CBT of Marin, Paredes and Bonacic (WIDM 2008)."""

from bspcrawl.cbt.idtable import IdTable
from bspcrawl.cbt.tree import CBT

__all__ = ["CBT", "IdTable"]
