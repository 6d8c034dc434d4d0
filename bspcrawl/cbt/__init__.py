"""Per-rank URL priority queues of Marin, Paredes and Bonacic (WIDM 2008): the CBT
(Figs. 1-2), its T-way parallel form (Table 1, Fig. 10), and the QuickHeap (Figs. 4-5)
and binary heap baselines (Figs. 8-9), with work counters and simulated block I/O."""

from bspcrawl.cbt.base import BulkQueue
from bspcrawl.cbt.binheap import BinaryHeap
from bspcrawl.cbt.cost import BlockCache
from bspcrawl.cbt.idtable import IdTable
from bspcrawl.cbt.parallel import ParallelCBT
from bspcrawl.cbt.quickheap import QuickHeap
from bspcrawl.cbt.tree import CBT

__all__ = ["CBT", "BinaryHeap", "BlockCache", "BulkQueue", "IdTable", "ParallelCBT", "QuickHeap"]
