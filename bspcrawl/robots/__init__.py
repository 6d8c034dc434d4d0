"""The robots of Marin et al. (2008) and what they obey: the fetch workers (``fetcher``: one
libcurl CurlMulti thread per rank), robots.txt (``robotstxt``), the rest rule of politeness
(``politeness``), the address guard (``addresses``), and HTML parsing for links and text
(``links``, used by the commit pipeline). Imports nothing of ``index/`` nor of the loop
above it (docs/architecture.md, "Import rules")."""
