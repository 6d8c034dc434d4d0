"""Known-item search on a real documentation site: is the page about X in the top 3 when
one searches for X?

Git's HTML manual (Debian's ``git-doc``; ``--site gtk4``: GTK 4's API reference,
``libgtk-4-doc``), unpacked as ``scripts/bench_realweb.py`` does (``apt-get download`` and
``dpkg -x`` into ``--trees``), is served by nginx on 127.1.0.1,
crawled by ``bspcrawl run`` under ``mpiexec -n 2`` (robots.txt none, no politeness delay,
other hosts blacklisted), then each query of :data:`QUERIES` (the name of a page's subject,
as a user would type it) is searched (``bspcrawl search``'s default score, the top 10),
before and after ``bspcrawl rank`` adds PageRank, and the rank of the page it is about is
reported; 0 means not in the top 10.
``ms`` is the whole ``search`` call (snippets read from the WARC files included; the first
query also loads the history and the duplicate clusters).

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
from bench_realweb import SITES as SITES_REALWEB

from bspcrawl.search import Searcher, open_shards, search
from bspcrawl.testweb import free_port, host_address

GIT = Site("git", "git-doc", "usr/share/doc/git-doc", "Git's manual (asciidoc): 206 pages")
GIT_QUERIES = [  # (query, the page it is about)
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
GTK_QUERIES = [  # the class pages of GTK 4's API reference (the site of bench_realweb)
    ("button", "class.Button.html"),
    ("window", "class.Window.html"),
    ("label", "class.Label.html"),
    ("entry", "class.Entry.html"),
    ("list view", "class.ListView.html"),
    ("drawing area", "class.DrawingArea.html"),
    ("file chooser dialog", "class.FileChooserDialog.html"),
    ("header bar", "class.HeaderBar.html"),
    ("text view", "class.TextView.html"),
    ("scrolled window", "class.ScrolledWindow.html"),
]
SITES = {"git": (GIT, GIT_QUERIES), "gtk4": (SITES_REALWEB[0], GTK_QUERIES)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", choices=sorted(SITES), default="git")
    ap.add_argument("--trees", type=Path, default=CACHE)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("results/search_known_items.json"))
    ap.add_argument("--crawl", type=Path, help="keep the crawl in this (new) directory")
    a = ap.parse_args()
    site_info, queries = SITES[a.site]
    unpack(site_info, a.trees)
    nginx, _ = find_nginx()
    port, address = free_port(1), host_address(0)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        config = nginx_config({site_info.name: a.trees / site_info.name}, [site_info], port,
                              tmp)
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
        rows = [{"query": q, "page": page} for q, page in queries]
        for part in ("text", "pagerank"):  # before and after 'bspcrawl rank'
            if part == "pagerank":
                subprocess.run([str(py), "-m", "bspcrawl", "rank", str(crawl)], check=True,
                               capture_output=True)
            searcher = Searcher(open_shards(crawl))
            for row in rows:
                t = time.perf_counter()
                results = search(searcher, crawl, row["query"], k=10)
                took = time.perf_counter() - t
                urls = [r.url for r in results]
                target = site + row["page"]
                row[f"rank_{part}"] = urls.index(target) + 1 if target in urls else 0
                row[f"ms_{part}"] = round(took * 1e3, 1)
                row[f"top3_{part}"] = [u.removeprefix(site) for u in urls[:3]]
    top3 = {part: sum(0 < r[f"rank_{part}"] <= 3 for r in rows) for part in ("text", "pagerank")}
    print(f"{site_info.shape}: {searcher.totals.pages} pages crawled in {crawled:.1f} s on "
          f"{a.ranks} ranks; in the top 3: {top3['text']} of {len(rows)} queries without "
          f"PageRank, {top3['pagerank']} with")
    print(f"{'query':20} {'page':28} {'rank':>4} {'+PR':>4}  top 3 (with PageRank)")
    for r in rows:
        print(f"{r['query']:20} {r['page']:28} {r['rank_text']:4} {r['rank_pagerank']:4}  "
              f"{', '.join(r['top3_pagerank'])}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"site": site_info.shape, "pages": searcher.totals.pages,
                                 "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                 "queries": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
