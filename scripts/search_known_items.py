"""Known-item search on a real documentation site: is the page about X in the top 3 when
one searches for X?

Git's HTML manual (Debian's ``git-doc``, unpacked as ``scripts/bench_realweb.py`` does:
``apt-get download`` and ``dpkg -x`` into ``--trees``) is served by nginx on 127.1.0.1,
crawled by ``bspcrawl run`` under ``mpiexec -n 2`` (robots.txt none, no politeness delay,
other hosts blacklisted), then each query of :data:`QUERIES` (the name of a page's subject,
as a user would type it) is searched (``bspcrawl search``'s default score, the top 10) and
the rank of the page it is about is reported; 0 means not in the top 10.

Run: ``.venv/bin/python scripts/search_known_items.py`` (about a minute); writes
``results/search_known_items.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_realweb import CACHE, Site, find_nginx, nginx_config, start_nginx, unpack

from bspcrawl.search import Searcher, open_shards, search
from bspcrawl.testweb import free_port, host_address

SITE = Site("git", "git-doc", "usr/share/doc/git-doc", "Git's manual (asciidoc): 206 pages")
QUERIES = [  # (query, the page it is about)
    ("rebase", "git-rebase.html"),
    ("cherry pick", "git-cherry-pick.html"),
    ("bisect", "git-bisect.html"),
    ("worktree", "git-worktree.html"),
    ("stash", "git-stash.html"),
    ("reflog", "git-reflog.html"),
    ("gitignore", "gitignore.html"),
    ("blame", "git-blame.html"),
    ("sparse checkout", "git-sparse-checkout.html"),
    ("hooks", "githooks.html"),
    ("merge base", "git-merge-base.html"),
    ("format patch", "git-format-patch.html"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", type=Path, default=CACHE)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("results/search_known_items.json"))
    ap.add_argument("--crawl", type=Path, help="keep the crawl in this (new) directory")
    a = ap.parse_args()
    unpack(SITE, a.trees)
    nginx, _ = find_nginx()
    port, address = free_port(1), host_address(0)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        config = nginx_config({SITE.name: a.trees / SITE.name}, [SITE], port, tmp)
        server = start_nginx(nginx, config, tmp, [address], port)
        try:
            site = f"http://{address}:{port}/"
            (tmp / "seeds.txt").write_text(site + "index.html\n")
            crawl = a.crawl or tmp / "crawl"
            py = Path(sys.executable)
            t = time.perf_counter()
            subprocess.run([str(py.parent / "mpiexec"), "-n", str(a.ranks), str(py), "-m",
                            "mpi4py", "-m", "bspcrawl", "run", "--seeds",
                            str(tmp / "seeds.txt"), "--out", str(crawl), "--min-host-delay",
                            "0", "--response-factor", "0", "--allow-net", "127.0.0.0/8",
                            "--url-blacklist", f"^(?!{re.escape(site)})", "--progress",
                            "none"], check=True)
            crawled = time.perf_counter() - t
        finally:
            server.terminate()
            server.wait()
        searcher = Searcher(open_shards(crawl))
        rows = []
        for query, page in QUERIES:
            t = time.perf_counter()
            results = search(searcher, crawl, query, k=10)
            took = time.perf_counter() - t
            urls = [r.url for r in results]
            rank = urls.index(site + page) + 1 if site + page in urls else 0
            rows.append({"query": query, "page": page, "rank": rank, "ms": round(took * 1e3, 1),
                         "top3": [u.removeprefix(site) for u in urls[:3]]})
    top3 = sum(0 < r["rank"] <= 3 for r in rows)
    print(f"{SITE.shape}: {searcher.totals.pages} pages crawled in {crawled:.1f} s on "
          f"{a.ranks} ranks; {top3} of {len(rows)} queries find their page in the top 3")
    print(f"{'query':18} {'page':28} {'rank':>4}  top 3")
    for r in rows:
        print(f"{r['query']:18} {r['page']:28} {r['rank']:4}  {', '.join(r['top3'])}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"site": SITE.shape, "pages": searcher.totals.pages,
                                 "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                 "queries": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
