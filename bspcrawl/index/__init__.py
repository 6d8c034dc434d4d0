"""What a rank keeps of its crawl: the sequence window that orders commits (``window``), the
HDF5 store (``store``) and its term counts (``terms``), the archive of fetches
(``archive``: ``validators``, ``history``, ``warc``), and reading a finished crawl
(``output``, ``inspect``). Imports nothing of ``robots/`` nor of the loop above it
(docs/architecture.md, "Import rules")."""
