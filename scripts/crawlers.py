"""The crawlers the throughput benchmarks compare, and how each one is started and read.

``bench_throughput.py`` (the local web) and ``bench_realweb.py`` (documentation trees
behind nginx) run the same three crawlers with the same settings: every one starts from
the same seeds, obeys robots.txt, stays on the served hosts, has no delay and one
connection per host:

- bspcrawl (:func:`bspcrawl_command`): ``run --min-host-delay 0 --response-factor 0``,
  ``CONCURRENCY`` fetch workers per rank, under ``mpiexec -n P`` for P > 1;
- Scrapy (:func:`scrapy_command`, its own virtualenv ``results/.venv-scrapy`` made by
  :func:`scrapy_python`): a CrawlSpider (``SPIDER``), CONCURRENT_REQUESTS ``CONCURRENCY``,
  CONCURRENT_REQUESTS_PER_DOMAIN 1, DOWNLOAD_DELAY 0, ROBOTSTXT_OBEY with the product
  token ``bspcrawl`` (so it obeys the same robots.txt groups), LOG_LEVEL INFO, telnet
  console and remote control off; one LinkExtractor rule on the served hosts follows
  every ``<a>``/``<area>`` link (no file-extension filter, as the other two); the body text
  of every HTML page (bspcrawl indexes HTML only) is extracted (XPath ``string(//body)``
  on the tree parsel builds) and its words counted (``Counter``); nothing is stored;
- wget (:func:`wget_command`): ``--recursive --level=inf --span-hosts --domains=<the
  hosts> -e robots=on --delete-after``, one connection, started from one local page
  linking to the seeds (:func:`seed_page`); its robots.txt matching knows only ``wget``
  and ``*`` (not ``User-agent: bspcrawl`` groups), and it follows redirects into
  disallowed paths.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import bspcrawl

PY = sys.executable
MPIEXEC = str(Path(PY).parent / "mpiexec")
RESULTS = Path(__file__).resolve().parents[1] / "results"
SCRAPY_VENV = RESULTS / ".venv-scrapy"
CONCURRENCY = 8  # bspcrawl's default fetch workers per rank; Scrapy's total concurrency

SPIDER = '''
import json
from collections import Counter
from pathlib import Path

from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class BenchSpider(CrawlSpider):
    name = "bench"
    custom_settings = {
        "CONCURRENT_REQUESTS": %(concurrency)d,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "DEPTH_LIMIT": 0,
        "ROBOTSTXT_OBEY": True,
        "ROBOTSTXT_USER_AGENT": "bspcrawl",
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "LOG_LEVEL": "INFO",
    }

    def __init__(self, seeds, hosts, stats, *args, **kwargs):
        self.start_urls = Path(seeds).read_text().split()
        netlocs = hosts.split(",")  # LinkExtractor matches host:port, the offsite filter hosts
        self.allowed_domains = [netloc.split(":")[0] for netloc in netlocs]
        extractor = LinkExtractor(allow_domains=netlocs, deny_extensions=[])
        self.rules = (Rule(extractor, callback="parse_page", follow=True),)
        super().__init__(*args, **kwargs)
        self.stats_path = stats
        self.words = 0

    def parse_start_url(self, response):
        return self.parse_page(response)

    def parse_page(self, response):
        if not isinstance(response, HtmlResponse):  # text, JSON, an image: as bspcrawl,
            return ()  # which indexes HTML only
        text = response.xpath("string(//body)").get()  # one string, not a Selector a node
        self.words += Counter(text.lower().split()).total()
        return ()

    def closed(self, reason):
        stats = dict(self.crawler.stats.get_stats(), words=self.words, reason=reason)
        Path(self.stats_path).write_text(json.dumps(stats, default=str, indent=1))
'''


def compile_bspcrawl() -> None:
    """Compile bspcrawl's modules to bytecode, as installing a wheel does (Scrapy's are, in
    its virtualenv): from an editable install under ``PYTHONDONTWRITEBYTECODE=1``, as on
    this machine, every process of every run would compile them all again (~0.13 s of CPU
    at a rank's start, ~0.02 s at a parse helper's). Files already up to date are kept."""
    subprocess.run([PY, "-m", "compileall", "-q", str(Path(bspcrawl.__file__).parent)],
                   check=True)


def source_digest() -> str:
    """A digest of bspcrawl's source files, to tell whether the code changed during a run."""
    digest = hashlib.sha256()
    package = Path(bspcrawl.__file__).parent
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def source_note(digests: list[str]) -> str:
    """"bspcrawl source <digest>." of the :func:`source_digest` taken before and after a
    run, with a warning if they differ."""
    note = f"bspcrawl source {digests[0]}."
    if digests[-1] != digests[0]:
        note += f" WARNING: bspcrawl's source changed during the run (now {digests[-1]})."
    return note


def write_results(stem: str, text: str, result: dict) -> None:
    """Prints ``text`` and writes it to ``results/<stem>.md``, ``result`` to
    ``results/<stem>.json``."""
    print(f"\n{text}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{stem}.md").write_text(text)
    (RESULTS / f"{stem}.json").write_text(json.dumps(result, indent=1))


def bspcrawl_command(seeds: Path, out: Path, ranks: int = 1, *options: str) -> list[str]:
    """``bspcrawl run`` with no politeness delay, on ``ranks`` ranks (``mpiexec`` if > 1)."""
    run = ["-m", "bspcrawl", "run", "--seeds", str(seeds), "--out", str(out), "--overwrite",
           "--min-host-delay", "0", "--response-factor", "0", "--allow-net", "127.0.0.0/8",
           "--workers", str(CONCURRENCY), "--progress", "none", *options]
    if ranks == 1:
        return [PY, *run]
    return [MPIEXEC, "-n", str(ranks), PY, "-m", "mpi4py", *run]


def bspcrawl_summary(out: Path) -> dict:
    """The summary of a finished bspcrawl crawl (``inspect --json``: ``pages_fetched``,
    ``counters``, ...)."""
    info = subprocess.run([PY, "-m", "bspcrawl", "inspect", str(out), "--json"],
                          check=True, capture_output=True, text=True).stdout
    return json.loads(info)


def bspcrawl_disk(out: Path) -> dict[str, int]:
    """Bytes a finished bspcrawl crawl keeps on disk: its WARC files, its HDF5 files (rank
    files, crawl.h5) and its checkpoint."""
    def size(pattern: str) -> int:
        return sum(p.stat().st_size for p in out.glob(pattern))
    return {"warc": size("warc/*.warc.gz"), "hdf5": size("*.h5"),
            "checkpoint": size("checkpoint/*.h5")}


def bspcrawl_urls(out: Path) -> dict[str, int]:
    """Every URL a finished bspcrawl crawl fetched, with its status (``inspect --urls``)."""
    lines = subprocess.run([PY, "-m", "bspcrawl", "inspect", str(out), "--urls"],
                           check=True, capture_output=True, text=True).stdout.splitlines()
    return {url: int(status) for url, status in (line.split("\t") for line in lines)}


def scrapy_python() -> tuple[Path, str]:
    """Python of Scrapy's own virtualenv (created with ``pip install scrapy`` if missing),
    and Scrapy's version line."""
    py = SCRAPY_VENV / "bin" / "python"
    if not (SCRAPY_VENV / "bin" / "scrapy").exists():
        subprocess.run([PY, "-m", "venv", "--clear", str(SCRAPY_VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "scrapy"], check=True)
    version = subprocess.run([str(py), "-m", "scrapy", "version"], check=True,
                             capture_output=True, text=True).stdout.strip()
    return py, version


def scrapy_command(scrapy: Path, seeds: Path, netlocs: list[str], tmp: Path) -> list[str]:
    """Scrapy's command line (writes the spider to ``tmp``; its stats go to
    ``tmp/scrapy.json``, read by :func:`scrapy_stats`)."""
    spider = tmp / "bench_spider.py"
    spider.write_text(SPIDER % {"concurrency": CONCURRENCY})
    return [str(scrapy), "-m", "scrapy", "runspider", str(spider), "-a", f"seeds={seeds}",
            "-a", f"hosts={','.join(netlocs)}", "-a", f"stats={tmp / 'scrapy.json'}"]


def scrapy_stats(tmp: Path) -> dict:
    """The numeric stats of the last Scrapy crawl in ``tmp``, with ``pages``: responses other
    than robots.txt."""
    stats = json.loads((tmp / "scrapy.json").read_text())
    numbers = {k: v for k, v in stats.items() if not isinstance(v, str)}
    pages = stats["downloader/response_count"] - stats.get("robotstxt/response_count", 0)
    return dict(numbers, pages=pages)


def wget_version() -> str:
    """wget's version line ("GNU Wget 1.21.3 built on linux-gnu")."""
    return subprocess.run(["wget", "--version"], check=True, capture_output=True,
                          text=True).stdout.splitlines()[0].rstrip(".")


def wget_command(start: str, netlocs: list[str], tmp: Path, *options: str) -> list[str]:
    """``wget -r`` from the page ``start`` over the hosts of ``netlocs`` (its log goes to
    ``tmp/wget.log``, its files to ``tmp/wget``, deleted as it goes)."""
    hosts = ",".join(netloc.split(":")[0] for netloc in netlocs)
    return ["wget", "--recursive", "--level=inf", "--span-hosts", f"--domains={hosts}",
            "-e", "robots=on", "--delete-after", "--no-verbose",
            "--output-file", str(tmp / "wget.log"), "--directory-prefix", str(tmp / "wget"),
            *options, start]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def seed_page(seeds: list[str], tmp: Path) -> str:
    """Serves (from a thread of this process) a page linking to every seed; returns its URL.

    wget crawls each URL given on its command line as a separate recursion with its own
    set of visited URLs, so three seeds would crawl a connected web three times; one start
    page linking to the seeds gives one recursion."""
    (tmp / "seedweb").mkdir()
    links = "".join(f'<a href="{url}">seed</a>\n' for url in seeds)
    (tmp / "seedweb" / "seeds.html").write_text(f"<!DOCTYPE html>\n<body>\n{links}</body>\n")
    handler = functools.partial(_Quiet, directory=str(tmp / "seedweb"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}/seeds.html"


def wget_downloaded(tmp: Path) -> int:
    """wget's own count: "Downloaded: N files" at the end of its log (files saved: robots.txt
    files and its start page included, 404s not)."""
    found = re.findall(r"Downloaded: (\d+) files", (tmp / "wget.log").read_text())
    return int(found[-1]) if found else 0


def own_figures(name: str, argv: list[str], tmp: Path) -> dict:
    """What a finished crawl says of itself: ``own_count`` (pages), and bspcrawl's
    robots.txt and frontier ``counters`` or Scrapy's ``scrapy_stats``; deletes wget's
    files."""
    if name.startswith("bspcrawl"):
        summary = bspcrawl_summary(Path(argv[argv.index("--out") + 1]))
        counters = {k: v for k, v in summary["counters"].items()
                    if k.startswith(("robotstxt/", "frontier/"))}
        return {"own_count": summary["pages_fetched"], "counters": counters}
    if name.startswith("scrapy"):
        stats = scrapy_stats(tmp)
        return {"own_count": stats["pages"], "scrapy_stats": stats}
    shutil.rmtree(tmp / "wget", ignore_errors=True)
    return {"own_count": wget_downloaded(tmp)}


def check_exit(name: str, done: subprocess.CompletedProcess) -> None:
    """Ends the benchmark with the crawler's stderr if it failed (wget's 8: some 404s)."""
    if done.returncode != 0 and not (name.startswith("wget") and done.returncode == 8):
        sys.exit(f"{name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
