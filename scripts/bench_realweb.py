"""Pages and CPU of bspcrawl (P = 1, 2), Scrapy and ``wget -r`` on real documentation trees
served by nginx, and whether bspcrawl fetched exactly what wget did.

The sites (``SITES``) are HTML documentation trees that Debian's ``-doc`` packages ship,
fetched with ``apt-get download`` and unpacked with ``dpkg -x`` (nothing is installed)
into ``--trees`` (default ``~/.cache/bspcrawl-realweb``), and reused from there: the GTK 4
API reference (gi-docgen, ~5,800 small pages), the CMake manual (Sphinx: every page and
its reStructuredText source, a 2.7 MB index), SQLite's site (hand-written, flat, pages
of 1.0 to 1.9 MB, and a robots.txt that disallows its release notes) and Node.js's API
reference (65 pages, one of 5.8 MB). Links out of a tree (to other packages, or to the
real web) are not followed; links to files a package does not ship are answered 404.
``--other`` crawls five other trees instead (``OTHER_SITES``), ``--dense`` pandas' docs
(``DENSE_SITES``: pages of hundreds of links, the shape of most API references),
``--shapes`` thirteen trees of other generators (``SHAPE_SITES``: Javadoc with and without
frames, Doxygen's image maps, Texinfo's meta-refresh pages, DocBook XSL and DSSSL), each
also served with nginx's directory listings and no index page, so that every file of the
tree is reached and every page's links count.

nginx (found on the PATH or as /usr/sbin/nginx; when missing and run as root, installed
with ``apt-get install nginx``) serves each tree on its own loopback address (127.1.0.1,
127.1.0.2, ..., one port: the local web's addresses), runs as the current user from a
temporary directory (its configuration, pid file, error and access logs there) and logs
every request: server address, request URI, status, bytes. One worker process: the
crawlers get the other core.

Then, ``--repeat`` rounds, each crawler in turn: ``wget -r`` (the ground truth and a
baseline), Scrapy, bspcrawl P = 1 and P = 2 (with its HDF5 index and WARC archive, the
defaults), with the settings of ``crawlers.py``: the sites' home pages as seeds, robots.txt
obeyed, no politeness delay, one connection per host, only the served hosts (bspcrawl:
``--url-blacklist`` of every other URL; Scrapy: allowed domains; wget: ``--domains``).
wget follows the same kinds of links as bspcrawl (``--follow-tags=a,area,frame,iframe,meta``:
not images, stylesheets and scripts, nor ``<link rel=search>``); the robots.txt has only a
``User-agent: *`` group, the one all three read alike.

Measured for each crawl: wall time; CPU (user + sys) of all of the crawler's processes
(``RUSAGE_CHILDREN``: mpiexec, its proxies and ranks); nginx's CPU (master and worker, from
/proc) apart; pages: the requests other than robots.txt that nginx logged during the crawl
(200, 3xx and 404), per site too, and the count each crawler gives itself (bspcrawl's
``inspect``, Scrapy's stats, wget's "Downloaded: N files", which counts robots.txt files
and wget's start page and not 404s).

Checks: the truth is the set of URLs wget requested (robots.txt excluded, as full URLs
``http://<address>:<port><request URI>``, the first round's; later rounds of wget must
request the same). For each bspcrawl crawl its fetched set (``inspect --urls``) must equal
the truth, and what nginx logged for it; it must request no URL twice, none that
robots.txt disallows, and fetch no robots.txt but the served hosts' (its
``robotstxt/fetched`` counter). Differences are listed (counts and the first 10 URLs each
way); a URL wget requested because it reads an href otherwise than WHATWG's URL parser
(``WGET_QUIRKS``: a backslash, an href in a script's string, a ``url()`` of CSS) is listed
with the reason and is no error. Any other is an
error, and the script exits 1 after writing its results. Scrapy's set is compared with
the truth for information. Writes ``results/bench_realweb.{md,json}``.

    python scripts/bench_realweb.py               # all sites (~10,800 URLs), 1 round
    python scripts/bench_realweb.py --repeat 3    # medians of 3 interleaved rounds
    python scripts/bench_realweb.py --quick       # SQLite and Node.js only (~1,100 URLs)
    python scripts/bench_realweb.py --other       # five other trees (~5,400 URLs)
    python scripts/bench_realweb.py --dense       # pandas: ~2,600 pages of ~480 links
    python scripts/bench_realweb.py --shapes --crawlers wget bspcrawl-1 bspcrawl-2
                                                  # 26 sites of other generators (~20,000 URLs)
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import pwd
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from urllib.robotparser import RobotFileParser

import crawlers
from cpu import family_cpu, timed

from bspcrawl.testweb import free_port, host_address

CACHE = Path.home() / ".cache" / "bspcrawl-realweb"
# wget first: the truth; bspcrawl-P: P ranks with the defaults (--parse-processes -1,
# docs/architecture.md); -hN: N parse helpers a rank
CRAWLERS = ["wget", "scrapy", "bspcrawl-1", "bspcrawl-2", "bspcrawl-1-h0", "bspcrawl-2-h0",
            "bspcrawl-1-h1", "bspcrawl-2-h1"]
DEFAULT = CRAWLERS[:6]  # the crawlers run unless --crawlers names others
WGET_TAGS = "a,area,frame,iframe,meta"  # the elements whose links bspcrawl follows (but
# <link rel=canonical/alternate/next>: wget takes every <link>, stylesheets included)
EXAMPLES = 10  # URLs listed of each difference
WGET_QUIRKS = {  # a pattern of URLs wget requests: how wget found them (not as WHATWG's URL
    # parser or a browser's links would)
    r"%5C": "wget keeps a backslash of an href (as %5C); WHATWG's URL parser (bspcrawl's, "
            "browsers') reads it as '/'",
    r"%22%20\+%20": "wget reads href= inside a <script>'s strings (`\"<a href='\" + base + "
                    "\"'>\"`); an HTML parser (bspcrawl's, browsers') reads a script as text",
    r"\.(css|png|gif|jpe?g|svg|ico|woff2?|ttf|otf|eot)$": "wget reads url() in CSS (a "
            "<style> element, a style attribute, a stylesheet it fetched) even with "
            "--follow-tags; such a URL is a resource a page loads, not a link to follow",
}


@dataclass(frozen=True, slots=True)
class Site:
    """One documentation tree and how it is served."""

    name: str
    """Short name; the tree's directory under ``--trees``."""
    package: str
    """The Debian package that ships the tree."""
    root: str
    """The served directory, inside the unpacked package."""
    shape: str
    """What the site is a test of."""
    robots: str = ""
    """The robots.txt served ('': none, a 404)."""
    quick: bool = False
    """Crawled with ``--quick`` too."""
    seeds: tuple[str, ...] = ("/",)
    """The paths the crawls start from."""
    listing: bool = False
    """Served with nginx's directory listings and no index page, so that every file is
    linked: every page's links count, not only those of the pages reached from a seed."""
    tree: str = ""
    """The tree's directory under ``--trees`` ('': ``name``)."""

    @property
    def directory(self) -> str:
        """The tree's directory under ``--trees``."""
        return self.tree or self.name


SITES = [
    Site("gtk4", "libgtk-4-doc", "usr/share/doc/libgtk-4-doc/gtk4",
         "GTK 4 API reference (gi-docgen): over 3,000 small pages, wide fan-out"),
    Site("cmake", "cmake-doc", "usr/share/doc/cmake-data/html",
         "CMake manual (Sphinx): each page and its source (.txt), a 2.7 MB index page"),
    Site("sqlite", "sqlite3-doc", "usr/share/doc/sqlite3",
         "SQLite's site (hand-written, flat): pages over 1 MB, robots.txt disallows "
         "/releaselog/", robots="User-agent: *\nDisallow: /releaselog/\n", quick=True),
    Site("nodejs", "nodejs-doc", "usr/share/doc/nodejs/api",
         "Node.js API reference: 65 pages, all.html 5.8 MB", quick=True),
]

OTHER_SITES = [  # --other: a second set of trees, to check the fetched set on more sites
    Site("django", "python-django-doc", "usr/share/doc/python-django-doc/html",
         "Django 3.2 docs (Sphinx, 48 KB pages): inline scripts that build links as strings"),
    Site("glib", "libglib2.0-doc", "usr/share/gtk-doc/html/glib", "GLib reference (gtk-doc)",
         quick=True),
    Site("sphinx", "sphinx-doc", "usr/share/doc/sphinx-doc/html", "Sphinx 5.3 docs", quick=True),
    Site("git", "git-doc", "usr/share/doc/git-doc", "git's manual pages (AsciiDoc)"),
    Site("scipy", "python-scipy-doc", "usr/share/doc/python-scipy-doc/html",
         "SciPy 1.10 docs (Sphinx, pydata theme): one big site, 4,300 pages of 22 KB"),
]

DENSE_SITES = [  # --dense: the shape of the issue's sites (and of most API references)
    Site("pandas", "python-pandas-doc", "usr/share/doc/python-pandas-doc/html",
         "pandas 1.5 docs (Sphinx, pydata theme): one site of pages with hundreds of "
         "links (a sidebar of every function of a section); the crawl reaches 2,610 pages, "
         "96 KB and ~480 links each"),
]

SHAPE_SITES = [  # --shapes: documentation generators of other kinds, a check of the fetched set
    Site("colt", "libcolt-free-java-doc", "usr/share/doc/libcolt-free-java",
         "Colt 1.2: a hand-written site and a Javadoc of 2004 (frames, upper-case tags, "
         "@import in <style>)"),
    Site("j2ssh", "libj2ssh-java-doc", "usr/share/doc/libj2ssh-java-doc/api",
         "J2SSH Javadoc, JDK 8 (a frameset and its noframes, index.html?pkg/Class.html links)"),
    Site("commonsio", "libcommons-io-java-doc", "usr/share/doc/libcommons-io-java/api",
         "commons-io 2.11 Javadoc, JDK 17 (no frames, its search index in scripts)"),
    Site("qwt", "libqwt-doc", "usr/share/doc/libqwt-doc/html",
         "Qwt 6.1 (Doxygen 1.8): class diagrams as <map><area>, a search/ folder"),
    Site("cppunit", "libcppunit-doc", "usr/share/doc/libcppunit-doc/html",
         "CppUnit (Doxygen): include graphs as <map><area>"),
    Site("octave", "octave-doc", "usr/share/doc/octave/octave.html",
         "GNU Octave 7.3 manual (Texinfo 6.8, a page a node): 2,356 meta-refresh pages"),
    Site("maxima", "maxima-doc", "usr/share/doc/maxima-doc/html",
         "Maxima 5.46 manual (Texinfo 6.8)", seeds=("/maxima_toc.html",)),
    Site("mitscheme", "mit-scheme-doc", "usr/share/doc/mit-scheme-doc/html",
         "MIT/GNU Scheme 12.1: four Texinfo manuals that link each other"),
    Site("docbookxsl", "docbook-xsl-doc-html", "usr/share/doc/docbook-xsl-doc-html/doc",
         "DocBook XSL 1.79 reference (DocBook XSL, chunked)"),
    Site("systemtap", "systemtap-doc", "usr/share/doc/systemtap-doc/tapsets",
         "SystemTap 4.8 tapsets: 754 DocBook refentry pages"),
    Site("freetds", "freetds-doc", "usr/share/doc/freetds-doc",
         "FreeTDS 1.3: a DocBook guide and a Doxygen 1.9 reference whose menus are scripts",
         seeds=("/userguide/index.html", "/reference/index.html", "/tds.html",
                "/reference/annotated.html", "/reference/files.html",
                "/reference/modules.html", "/reference/globals.html")),
    Site("dsssl", "docbook-dsssl-doc", "usr/share/doc/docbook-dsssl-doc/doc",
         "DocBook DSSSL docs (Jade: upper-case HTML 3.2, .htm pages, <LINK REL=NEXT>)"),
    Site("zsh", "zsh-doc", "usr/share/doc/zsh-common/html",
         "zsh 5.9 manual (texi2any): 144 meta-refresh pages"),
]
SHAPE_SITES += [replace(s, name=f"{s.name}-ls", listing=True, tree=s.name, seeds=("/",),
                        shape=f"{s.shape}; every directory listed")
                for s in SHAPE_SITES]

MIME_TYPES = {  # what nginx answers in Content-Type, by file extension
    "text/html": "html htm", "text/plain": "txt md rst", "text/css": "css",
    "application/javascript": "js", "application/json": "json", "application/xml": "xml",
    "image/png": "png", "image/gif": "gif", "image/jpeg": "jpg jpeg", "image/svg+xml": "svg",
    "image/x-icon": "ico", "application/pdf": "pdf", "application/gzip": "gz"}


# --- the trees --------------------------------------------------------------------------

def tree_facts(root: Path) -> dict:
    """Files, HTML pages, pages over 1 MB, the largest page and bytes of a served tree."""
    files = [p for p in root.rglob("*") if p.is_file()]  # a dangling link is no file
    pages = [p for p in files if p.suffix == ".html"]
    sizes = sorted((p.stat().st_size for p in pages), reverse=True)
    return {"files": len(files), "html": len(pages),
            "html_over_1mb": sum(s > 1 << 20 for s in sizes),
            "largest_html": sizes[0] if sizes else 0,
            "bytes": sum(p.stat().st_size for p in files)}


def unpack(site: Site, trees: Path) -> dict:
    """The site's tree under ``trees`` (downloaded and unpacked if missing): its package,
    version and facts, kept in ``trees/<name>.json``."""
    meta, folder = trees / f"{site.directory}.json", trees / site.directory
    if meta.exists() and folder.is_dir():
        return json.loads(meta.read_text())
    if not shutil.which("apt-get") or not shutil.which("dpkg"):
        sys.exit(f"bench_realweb: no apt-get/dpkg to fetch {site.package}; give a --trees "
                 "directory that has the trees")
    trees.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=trees) as tmp:
        got = subprocess.run(["apt-get", "download", site.package], cwd=tmp,
                             capture_output=True, text=True)
        debs = list(Path(tmp).glob("*.deb"))
        if got.returncode or not debs:
            sys.exit(f"bench_realweb: apt-get download {site.package} failed (run apt-get "
                     f"update first?): {got.stderr.strip().splitlines()[-1:]}")
        version = subprocess.run(["dpkg-deb", "-f", str(debs[0]), "Version"], check=True,
                                 capture_output=True, text=True).stdout.strip()
        subprocess.run(["dpkg", "-x", str(debs[0]), f"{tmp}/x"], check=True)
        if not (Path(tmp) / "x" / site.root).is_dir():
            sys.exit(f"bench_realweb: {site.package} {version} has no {site.root}")
        shutil.rmtree(folder, ignore_errors=True)
        (Path(tmp) / "x" / site.root).rename(folder)
    info = {"package": site.package, "version": version, "root": site.root,
            **tree_facts(folder)}
    meta.write_text(json.dumps(info, indent=1))
    print(f"unpacked {site.package} {version} ({info['html']} pages) into "
          f"{folder}", file=sys.stderr)
    return info


# --- nginx ------------------------------------------------------------------------------

def find_nginx() -> tuple[str, str]:
    """The nginx binary and how it was found (installed with apt-get as root if missing)."""
    for path in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if path and os.access(path, os.X_OK):
            return path, f"found {path}"
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        sys.exit("bench_realweb: nginx not found (not on the PATH nor /usr/sbin/nginx); "
                 "install it (apt-get install nginx) or run as root to let this script do it")
    argv = ["apt-get", "install", "-y", "--no-install-recommends", "nginx"]
    print(f"nginx not found: running {' '.join(argv)}", file=sys.stderr)
    done = subprocess.run(argv, capture_output=True, text=True,
                          env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if done.returncode or not os.access("/usr/sbin/nginx", os.X_OK):
        sys.exit(f"bench_realweb: {' '.join(argv)} failed: "
                 f"{done.stderr.strip().splitlines()[-1:]}")
    return "/usr/sbin/nginx", f"installed by this script ({' '.join(argv)})"


def nginx_version(nginx: str) -> str:
    """``nginx/1.22.1`` (``nginx -v`` prints it on stderr)."""
    return subprocess.run([nginx, "-v"], capture_output=True,
                          text=True).stderr.split(": ")[-1].strip()


def nginx_config(roots: dict[str, Path], sites: list[Site], port: int, tmp: Path) -> str:
    """nginx.conf: every site on its own address, one worker, logs and temp files in tmp;
    404s are not written to the error log, responses are not compressed (wget asks for no
    compression)."""
    user = (f"user {pwd.getpwuid(os.getuid()).pw_name};\n" if os.geteuid() == 0 else "")
    types = "".join(f"        {mime} {exts};\n" for mime, exts in MIME_TYPES.items())
    temps = "".join(f"    {kind}_temp_path {tmp}/{kind};\n"
                    for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    servers = []
    for i, site in enumerate(sites):
        robots = ""
        if site.robots:
            text = site.robots.replace("\n", "\\n")
            robots = (f'        location = /robots.txt {{ default_type text/plain; '
                      f'return 200 "{text}"; }}\n')
        listing = ("        autoindex on;\n        index .no-index-page;\n" if site.listing
                   else "")
        servers.append(f"    server {{\n        listen {host_address(i)}:{port};\n"
                       f"        root {roots[site.name]};\n{listing}{robots}    }}\n")
    return (f"{user}daemon off;\nmaster_process on;\nworker_processes 1;\n"
            f"pid {tmp}/nginx.pid;\nerror_log {tmp}/error.log warn;\n"
            f"events {{ worker_connections 1024; }}\n"
            f"http {{\n    types {{\n{types}    }}\n"
            f"    default_type application/octet-stream;\n{temps}"
            f"    log_format crawl '$server_addr:$server_port\\t$request_uri\\t$status\\t"
            f"$body_bytes_sent';\n    access_log {tmp}/access.log crawl;\n"
            f"    log_not_found off;\n    sendfile on;\n    index index.html;\n"
            f"{''.join(servers)}}}\n")


def start_nginx(nginx: str, config: str, tmp: Path, addresses: list[str],
                port: int) -> subprocess.Popen:
    """nginx in the foreground (``daemon off``), once it answers on every address."""
    (tmp / "nginx.conf").write_text(config)
    (tmp / "access.log").touch()
    server = subprocess.Popen([nginx, "-p", str(tmp), "-e", str(tmp / "error.log"),
                               "-c", str(tmp / "nginx.conf")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    for address in addresses:
        while True:
            if server.poll() is not None:
                sys.exit(f"bench_realweb: nginx did not start: {server.stderr.read().strip()}")
            try:
                socket.create_connection((address, port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    server.kill()
                    sys.exit(f"bench_realweb: nginx does not answer on {address}:{port}")
                time.sleep(0.05)
    return server


def requests_after(log: Path, offset: int) -> list[tuple[str, str, int]]:
    """The requests nginx logged after byte ``offset``: (URL, status, bytes), in order."""
    with log.open("rb") as f:
        f.seek(offset)
        rows = [line.decode("utf-8", "replace").rstrip("\n").split("\t") for line in f]
    return [(f"http://{netloc}{uri}", status, int(size)) for netloc, uri, status, size in rows]


# --- the crawls -------------------------------------------------------------------------

def commands(seeds: Path, netlocs: list[str], tmp: Path, scrapy: Path) -> dict[str, list[str]]:
    """The command line of each crawler (run with the working directory ``tmp``)."""
    hosts = "|".join(re.escape(netloc) for netloc in netlocs)
    elsewhere = f"^(?!http://(?:{hosts})/)"  # bspcrawl takes no URL of another host
    start = crawlers.seed_page(seeds.read_text().split(), tmp)
    bspcrawl = functools.partial(crawlers.bspcrawl_command, seeds)
    return {
        "wget": crawlers.wget_command(start, netlocs, tmp, f"--follow-tags={WGET_TAGS}"),
        "scrapy": crawlers.scrapy_command(scrapy, seeds, netlocs, tmp),
        "bspcrawl-1": bspcrawl(tmp / "out-1", 1, "--url-blacklist", elsewhere),
        "bspcrawl-2": bspcrawl(tmp / "out-2", 2, "--url-blacklist", elsewhere),
        **{f"bspcrawl-{p}-h{n}": bspcrawl(tmp / f"out-{p}-h{n}", p, "--url-blacklist",
                                          elsewhere, "--parse-processes", str(n))
           for p in (1, 2) for n in (0, 1)},
    }


def robots_rules(sites: list[Site], netlocs: list[str]) -> dict[str, RobotFileParser]:
    """The robots.txt rules of each site that has some, by netloc (Python's parser: the
    rules here are plain path prefixes, which every crawler reads alike)."""
    rules = {}
    for site, netloc in zip(sites, netlocs, strict=True):
        if site.robots:
            rules[netloc] = RobotFileParser()
            rules[netloc].parse(site.robots.splitlines())
    return rules


def crawl(name: str, argv: list[str], tmp: Path, server: subprocess.Popen, log: Path,
          sites: dict[str, str], robots: dict[str, RobotFileParser]) -> dict:
    """One crawl: wall time, CPU, nginx's CPU, the requests nginx logged (pages: all but
    robots.txt), per site and status, those robots.txt disallows, and the crawler's own
    count."""
    offset, server0 = log.stat().st_size, family_cpu(server.pid)
    done, wall, cpu = timed(argv, tmp)
    crawlers.check_exit(name, done)
    time.sleep(0.3)  # nginx logs a request when its response is sent
    logged = requests_after(log, offset)
    pages = [(url, status) for url, status, _ in logged if not url.endswith("/robots.txt")]
    per_site: dict[str, collections.Counter] = {}
    for url, status in pages:
        netloc = url.split("/")[2]
        per_site.setdefault(sites[netloc], collections.Counter())[status] += 1
    run = {"crawler": name, "wall_s": wall, "cpu_s": cpu,
           "nginx_cpu_s": family_cpu(server.pid) - server0, "pages": len(pages),
           "robots": len(logged) - len(pages), "bytes": sum(size for *_, size in logged),
           "status": dict(sorted(collections.Counter(s for _, s in pages).items())),
           "sites": {site: dict(sorted(c.items())) for site, c in sorted(per_site.items())},
           "disallowed": sum(1 for url, _ in pages if url.split("/")[2] in robots
                             and not robots[url.split("/")[2]].can_fetch("bspcrawl", url)),
           "urls": [url for url, _ in pages]}
    run.update(crawlers.own_figures(name, argv, tmp))
    if name.startswith("bspcrawl"):
        out = Path(argv[argv.index("--out") + 1])
        run["fetched"] = crawlers.bspcrawl_urls(out)
        run["disk"] = crawlers.bspcrawl_disk(out)  # for docs/scale.md: disk per page
    return run


def wget_quirk(url: str) -> str | None:
    """Why wget requested ``url`` where a crawler that parses URLs as WHATWG does would not
    (``WGET_QUIRKS``), or None."""
    return next((why for pattern, why in WGET_QUIRKS.items() if re.search(pattern, url)),
                None)


def difference(mine: set[str], truth: set[str]) -> dict:
    """How a set of URLs differs from the truth: counts, the first URLs each way, and the
    missed URLs a wget quirk explains (``unexplained``: the differences left)."""
    extra, missed = sorted(mine - truth), sorted(truth - mine)
    explained = {url: why for url in missed if (why := wget_quirk(url))}
    return {"extra": len(extra), "missed": len(missed),
            "unexplained": len(extra) + len(missed) - len(explained),
            "extra_examples": extra[:EXAMPLES], "missed_examples": missed[:EXAMPLES],
            "explained": explained}


def check(run: dict, truth: set[str], sites: int) -> list[str]:
    """Compares a crawl with the truth (and bspcrawl's own set with nginx's log); stores
    the differences in ``run`` and returns the errors found (bspcrawl only: a difference
    no wget quirk explains, a URL requested twice or disallowed, a robots.txt fetched from
    a host that is not one of the ``sites``)."""
    requested = collections.Counter(run.pop("urls"))
    twice = sorted(url for url, n in requested.items() if n > 1)
    run["twice"], run["twice_examples"] = len(twice), twice[:EXAMPLES]
    run["vs_truth"] = difference(set(requested), truth)
    if not run["crawler"].startswith("bspcrawl"):
        return []
    fetched = set(run.pop("fetched"))
    run["vs_truth"] = difference(fetched, truth)
    run["vs_log"] = difference(fetched, set(requested))
    name, errors = run["crawler"], []
    for what, diff in (("the truth (wget)", run["vs_truth"]), ("nginx's log", run["vs_log"])):
        if diff["unexplained"]:
            errors.append(f"{name}: fetched set differs from {what}: {diff['extra']} extra, "
                          f"{diff['missed']} missed, {diff['unexplained']} not explained")
    if twice:
        errors.append(f"{name}: {len(twice)} URLs requested more than once")
    if run["disallowed"]:
        errors.append(f"{name}: {run['disallowed']} URLs requested that robots.txt disallows")
    asked = run["counters"]["robotstxt/fetched"]
    if asked != sites or run["robots"] != sites:
        errors.append(f"{name}: {asked} robots.txt answers handled, {run['robots']} requested "
                      f"from nginx, for {sites} hosts")
    return errors


# --- the report -------------------------------------------------------------------------

def summarise(runs: list[dict]) -> list[dict]:
    """One row per crawler: medians of its runs, and ratios to wget's."""
    rows = []
    for name in CRAWLERS:
        mine = [r for r in runs if r["crawler"] == name]
        if not mine:
            continue
        row: dict = {"crawler": name}
        for key in ("pages", "own_count", "wall_s", "cpu_s", "nginx_cpu_s"):
            row[key] = statistics.median(r[key] for r in mine)
        for key in ("status", "robots", "sites", "twice", "vs_truth", "disallowed"):
            row[key] = mine[0][key]
        row["pages_per_cpu_s"] = row["pages"] / row["cpu_s"]
        rows.append(row)
    wget = next((r for r in rows if r["crawler"] == "wget"), None)
    for row in rows:
        row["wall_vs_wget"] = row["wall_s"] / wget["wall_s"] if wget else None
        row["rate_vs_wget"] = (row["pages_per_cpu_s"] / wget["pages_per_cpu_s"]
                               if wget else None)
    return rows


def ratio(x: float | None) -> str:
    """A ratio with two decimals, "-" for none."""
    return "-" if x is None else f"{x:.2f}"


def tables(rows: list[dict], trees: dict[str, dict]) -> str:
    """The markdown tables: crawlers, then pages per site (its package, HTML files) and
    crawler."""
    lines = ["| crawler | pages | own count | 200 / 3xx / 404 | robots.txt | vs truth: extra / "
             "missed / twice / disallowed | wall s | CPU-s | pages/CPU-s | nginx CPU-s | wall "
             "vs wget | pages/CPU-s vs wget |",
             "| --- | ---: | ---: | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        st, vs = r["status"], r["vs_truth"]
        redirects = sum(n for s, n in st.items() if s.startswith("3"))
        lines.append(
            f"| {r['crawler']} | {r['pages']:,} | {r['own_count']:,} | {st.get('200', 0):,} / "
            f"{redirects} / {st.get('404', 0)} | {r['robots']} | {vs['extra']} / {vs['missed']} / "
            f"{r['twice']} / {r['disallowed']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
            f"{r['pages_per_cpu_s']:.0f} | {r['nginx_cpu_s']:.1f} | "
            f"{ratio(r['wall_vs_wget'])} | {ratio(r['rate_vs_wget'])} |")
    lines += ["", "| site | package | HTML files | " + " | ".join(r["crawler"] for r in rows)
              + " |", "| --- | --- | ---: |" + " ---: |" * len(rows)]
    for site, tree in trees.items():
        cells = []
        for r in rows:
            st = r["sites"].get(site, {})
            cells.append(f"{sum(st.values()):,} ({st.get('404', 0)} 404)")
        lines.append(f"| {site} | {tree['package']} {tree['version']} | {tree['html']:,} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def differences(runs: list[dict]) -> str:
    """The differences from the truth, each crawl's, listed (empty if none)."""
    out = []
    for r in runs:
        for what in ("vs_truth", "vs_log"):
            diff = r.get(what)
            if diff and (diff["extra"] or diff["missed"]):
                against = "the truth" if what == "vs_truth" else "nginx's log"
                out.append(f"- {r['crawler']} round {r['round']} against {against}: "
                           f"{diff['extra']} extra, {diff['missed']} missed")
                out += [f"  - extra {u}" for u in diff["extra_examples"]]
                out += [f"  - missed {u}" + (f" ({diff['explained'][u]})"
                                             if u in diff["explained"] else "")
                        for u in diff["missed_examples"]]
        if r["twice"]:
            out.append(f"- {r['crawler']} round {r['round']}: {r['twice']} URLs requested "
                       "twice")
            out += [f"  - {u}" for u in r["twice_examples"]]
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trees", type=Path, default=CACHE,
                   help=f"where the unpacked trees are kept (default {CACHE})")
    p.add_argument("--repeat", type=int, default=1, help="rounds of all crawlers (default 1)")
    p.add_argument("--quick", action="store_true",
                   help="only the sites marked quick (SQLite, Node.js: ~1,100 URLs)")
    trees = p.add_mutually_exclusive_group()
    trees.add_argument("--other", action="store_true",
                       help="the other trees instead (Django, GLib, Sphinx, git, SciPy: "
                            "~5,400 URLs), a check of the fetched set on more sites")
    trees.add_argument("--dense", action="store_true",
                       help="pandas' docs instead (~2,600 pages of ~480 links each: the "
                            "shape where the cost per link counts)")
    trees.add_argument("--shapes", action="store_true",
                       help="13 trees of other generators instead (Javadoc, Doxygen, "
                            "Texinfo, DocBook), each also with every directory listed: "
                            "~20,000 URLs, a check of the fetched set")
    p.add_argument("--crawlers", nargs="+", default=DEFAULT, choices=CRAWLERS)
    args = p.parse_args()
    if "wget" not in args.crawlers:
        p.error("wget is the truth: keep it in --crawlers")
    chosen = (OTHER_SITES if args.other else DENSE_SITES if args.dense
              else SHAPE_SITES if args.shapes else SITES)
    sites = [s for s in chosen if s.quick or not args.quick]
    if not sites:
        p.error("no site of that set is marked quick")
    trees = {s.name: unpack(s, args.trees.expanduser()) for s in sites}
    nginx, how = find_nginx()
    print(f"nginx: {how}, {nginx_version(nginx)}", file=sys.stderr)
    scrapy, scrapy_version = crawlers.scrapy_python()
    wget = crawlers.wget_version()
    addresses = [host_address(i) for i in range(len(sites))]
    port = free_port(len(sites))
    netlocs = [f"{a}:{port}" for a in addresses]
    tmp = Path(tempfile.mkdtemp(prefix="bench_realweb-"))
    seeds, log = tmp / "seeds.txt", tmp / "access.log"
    seeds.write_text("".join(f"http://{n}{path}\n" for s, n in zip(sites, netlocs, strict=True)
                             for path in s.seeds))
    roots = {s.name: args.trees.expanduser().resolve() / s.directory for s in sites}
    names = dict(zip(netlocs, (s.name for s in sites), strict=True))
    robots = robots_rules(sites, netlocs)
    runs: list[dict] = []
    errors: list[str] = []
    truth: set[str] = set()
    crawlers.compile_bspcrawl()
    source = [crawlers.source_digest()]
    started = time.monotonic()
    server = None
    try:
        server = start_nginx(nginx, nginx_config(roots, sites, port, tmp), tmp, addresses,
                             port)
        cmds = {name: argv for name, argv in commands(seeds, netlocs, tmp, scrapy).items()
                if name in args.crawlers}
        for rep in range(args.repeat):
            for name, argv in cmds.items():
                run = dict(crawl(name, argv, tmp, server, log, names, robots), round=rep)
                if name == "wget" and not truth:
                    truth = set(run["urls"])
                errors += check(run, truth, len(sites))
                if name == "wget" and (run["vs_truth"]["extra"] or run["vs_truth"]["missed"]):
                    errors.append(f"wget round {rep} requested another set than round 0")
                runs.append(run)
                print(f"{name} round {rep}: {run['pages']} pages in {run['wall_s']:.1f} s, "
                      f"{run['cpu_s']:.1f} CPU-s (nginx {run['nginx_cpu_s']:.1f})",
                      file=sys.stderr)
        source.append(crawlers.source_digest())
    finally:
        if server:
            server.terminate()
            server.wait()
        shutil.rmtree(tmp)
    rows = summarise(runs)
    head = (f"{len(sites)} sites served by {nginx_version(nginx)} (one worker process), "
            f"truth: {len(truth):,} URLs "
            f"(wget's requests but robots.txt); median of {args.repeat} interleaved round(s), "
            f"{os.cpu_count()} cores shared with nginx. {scrapy_version}; {wget}. "
            f"Pages: requests other than robots.txt nginx answered during the crawl; own "
            f"count: the crawler's (wget: files saved, robots.txt and its start page "
            f"included, 404s not); CPU-s: user + sys of all the crawler's processes; whole "
            f"run {time.monotonic() - started:.0f} s. {crawlers.source_note(source)}")
    text = f"{head}\n\n{tables(rows, trees)}\n"
    listed = differences(runs)
    if listed:
        text += f"\nDifferences:\n\n{listed}\n"
    if errors:
        text += "\n" + "".join(f"ERROR: {e}\n" for e in errors)
    else:
        text += ("\nChecks: bspcrawl fetched the truth (but for the wget quirks listed), "
                 "nothing twice, nothing robots.txt disallows, no other host's robots.txt.\n")
    result = {"sites": [dict(asdict(s), **trees[s.name]) for s in sites],
              "nginx": nginx_version(nginx), "nginx_found": how, "scrapy": scrapy_version,
              "wget": wget, "repeat": args.repeat, "cores": os.cpu_count(),
              "truth": len(truth), "source": source, "errors": errors, "rows": rows,
              "runs": runs}
    crawlers.write_results("bench_realweb", text, result)
    if errors:
        sys.exit(1)


if __name__ == "__main__":
    main()
