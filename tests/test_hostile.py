"""The hostile web of the fuzzer (bspcrawl.testweb.hostile): its answers are a pure function
of (seed, netloc, target, k) and cover every hostile category of issue 14; its URL space is
finite; the server sends what the plans say and logs it, with the view libcurl has of it;
the audit finds planted problems (it can fail)."""

import collections
import contextlib
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zlib

import h5py
import pytest

from bspcrawl.messages import FetchJob
from bspcrawl.robots.fetcher import Fetcher
from bspcrawl.robots.links import LinkCache, parse_html
from bspcrawl.settings import Settings
from bspcrawl.testweb.hostile import (
    BLOCKED,
    ERR,
    OK,
    QUERIES,
    SHAPES,
    HostileConfig,
    HostileWeb,
    Plan,
    Request,
    audit,
    damaged,
    overlapping,
    read_log,
    repeated,
    responses,
    robots_source,
    running,
    serving,
)
from bspcrawl.urls import host_key, resolve
from tests.sites import Site, crawl_here, page

PY = sys.executable


def targets(config: HostileConfig, leaves: int = 0) -> list[tuple[str, str]]:
    """Every robots.txt, alias and page of a web, and ``leaves`` leaf targets per host."""
    out = []
    for h in range(config.hosts):
        netloc = config.netloc(h)
        out += [(netloc, "/robots.txt"), (netloc, "/")]
        out += [(netloc, f"/robots/{s}-{j}.txt") for s in range(config.hosts) for j in range(3)]
        out += [(netloc, f"/p/{i}") for i in range(config.pages)]
        out += [(netloc, f"/leaf/{i}") for i in range(leaves)]
    return out


def fingerprint(plan: Plan) -> tuple:
    return (plan.status, plan.view, plan.shape, plan.head, plan.body, plan.interim, plan.stall,
            plan.rate, plan.cut, plan.hold, plan.reset, plan.close, plan.timed)


# ------------------------------------------------------------------------ generator


DIGEST = """
import hashlib, sys
from bspcrawl.testweb.hostile import HostileConfig, HostileWeb
w = HostileWeb(HostileConfig(seed=7, hosts=3, pages=10, port=8766))
h = hashlib.sha256()
for i in range(3):
    for t in ("/robots.txt", "/", "/p/3", "/leaf/x", "/robots/1-2.txt"):
        for k in range(3):
            p = w.plan(f"127.1.0.{i + 1}:8766", t, k)
            h.update(repr((p.status, p.view, p.shape, p.head, p.body, p.cut, p.stall)).encode())
print(h.hexdigest())
"""


def test_an_answer_is_a_pure_function_of_seed_netloc_target_and_k():
    config = HostileConfig(seed=7, hosts=3, pages=10, port=8766)
    a, b = HostileWeb(config), HostileWeb(config)
    for netloc, target in targets(config)[:60]:
        for k in range(3):
            assert fingerprint(a.plan(netloc, target, k)) == fingerprint(b.plan(netloc, target, k))
    other = HostileWeb(HostileConfig(seed=8, hosts=3, pages=10, port=8766))
    pairs = [(netloc, target, k) for netloc, target in targets(config)[:60] for k in range(3)]
    assert sum(fingerprint(a.plan(*x)) != fingerprint(other.plan(*x)) for x in pairs) > 150
    assert sum(fingerprint(a.plan(n, t, 0)) != fingerprint(a.plan(n, t, 1))
               for n, t, _ in pairs) > 150  # a request again gets another answer
    # the same in other processes, whatever their hash seed (no hash())
    digests = {subprocess.run([PY, "-c", DIGEST], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
               for seed in (1, 2)}
    here = io.StringIO()
    with contextlib.redirect_stdout(here):
        exec(DIGEST, {})
    assert digests == {here.getvalue()}


def draws(seed: int = 3) -> list[Plan]:
    """~3,000 answers of a web: every robots.txt, alias, page and 50 leaves of 6 hosts,
    each requested 5 times."""
    config = HostileConfig(seed=seed, hosts=6, pages=30, port=8766)
    web = HostileWeb(config)
    return [web.plan(n, t, k) for n, t in targets(config, leaves=50) for k in range(5)]


# What the issue asks the web to hold: a tag (Plan.tags), a shape, or bytes of an answer.
TAGS = [
    "robots:200", "robots:4xx", "robots:429", "robots:5xx", "robots:odd_final",
    "robots:odd_unreachable", "robots:misbehaves", "robots:empty", "robots:html",
    "robots:big", "robots:many_rules", "robots:garbage", "robots:crawl_delay",
    "robots:disallow_all", "robots:nul", "robots:charset:utf-16-le:bom",
    "robots:charset:utf-16-be:bom", "robots:charset:utf-8:bom", "robots:charset:latin-1",
    "robots:redirect:rfollow", "robots:redirect:rrefused", "robots:redirect:rftp",
    "robots:redirect:rblocked", "page:links", "page:not_html", "page:redirect", "page:4xx",
    "page:429", "page:503", "page:5xx", "page:unknown", "page:bodiless_body", "links:flood",
    "links:junk", "links:refused", "location:none", "location:twice", "html:nul",
    "html:nested", "html:malformed", "html:unclosed_comment", "html:big",
    *(f"header:{h}" for h in (
        "retry-after", "etag", "last-modified", "expires", "cache-control", "x-robots-tag",
        "set-cookie-flood", "long-line", "obs-fold", "high-bytes", "name-odd", "duplicate",
        "control", "content-type-odd", "location-on-200", "date-odd")),
]
BYTES = {  # name: a pattern some answer's bytes match
    "Retry-After: ²": rb"\nRetry-After: \xc2\xb2\r", "Retry-After: 1e309": rb"\nRetry-After: 1e309",
    "Retry-After: -5": rb"\nRetry-After: -5\r", "Retry-After: year 99999":
        rb"\nRetry-After: [^\r]*99999 ", "Retry-After: empty": rb"\nRetry-After: \r",
    "Retry-After: non-ASCII": rb"\nRetry-After: \xff",
    "ETag >= 0x80": rb"\nETag: [^\r]*[\x80-\xff]",
    "Last-Modified >= 0x80": rb"\nLast-Modified: [^\r]*[\x80-\xff]",
    "Expires >= 0x80": rb"\nExpires: [^\r]*[\x80-\xff]",
    "Cache-Control >= 0x80": rb"\nCache-Control: [^\r]*[\x80-\xff]",
    "utf-16 with BOM": rb"charset=utf-16\r\n(?s:.*)\r\n\r\n\xff\xfe",
    "utf-16 without BOM": rb"charset=utf-16le\r", "x-user-defined": rb"charset=x-user-defined",
    "unknown charset": rb"charset=no-such-charset", "lying charset": rb"charset=utf-7",
    "Location relative": rb"\nLocation: \d+\r", "Location with a space": rb"\nLocation: /p/ \d",
    "Location to another host": rb"\nLocation: http://127\.1\.0\.\d+:8766/p/",
    "Location not http": rb"\nLocation: (ftp|javascript):", "Location very long":
        rb"\nLocation: /p/x{5000}", "Location with userinfo": rb"\nLocation: http://user@",
    "X-Robots-Tag garbage": rb"\nX-Robots-Tag: (:::|\xff)", "Set-Cookie flood":
        rb"(Set-Cookie: [^\r]*\r\n){50}", "header line >= 10 KB": rb"\n[^\r\n]{10000}",
    "HTTP/1.1 999": rb"^HTTP/1\.1 999 ", "HTTP/1.1 abc": rb"^HTTP/1\.1 abc",
    "1xx before the answer": rb"^HTTP/1\.1 10[023] ", "204 with a body": rb"^HTTP/1\.1 204 X",
    "304 with a body": rb"^HTTP/1\.1 304 X", "bad chunk size": rb"\r\n\r\nZZ\r\n",
    "chunk extension": rb";ext=1", "gzip label on plain bytes": rb"\nContent-Encoding: gzip\r",
    "br label": rb"\nContent-Encoding: br\r", "deflate label": rb"\nContent-Encoding: deflate\r",
    "double gzip": rb"\nContent-Encoding: gzip, gzip\r",
    "deep nesting": rb"(<div>){2000}", "unclosed comment": rb"<!-- ",
    "robots 500 KiB": rb"(?s:^.{500000})",
    "robots wildcards": rb"(Disallow: /p/\d+\*/x[\r\n]+){200}",
    "robots 2,000 rules": rb"(Disallow: /p/\d+/x[\r\n]+){2000}",
}


def test_every_hostile_category_occurs_in_a_few_thousand_answers():
    plans = draws()
    assert len(plans) == 3000
    tags = {t for p in plans for t in p.tags}
    assert [t for t in TAGS if t not in tags] == []
    assert {p.shape for p in plans} == set(SHAPES)
    statuses = {p.status for p in plans}
    assert statuses >= {200, 204, 299, 300, 301, 302, 303, 304, 305, 306, 307, 308, 400, 403,
                        404, 410, 429, 451, 500, 502, 503, 504, 599, 600, 999, 101}
    missing = [name for name, pattern in BYTES.items()
               if not any(re.search(pattern, p.data()) for p in plans)]
    assert missing == []
    assert any(p.reset for p in plans) and any(p.stall and not p.cut for p in plans)
    assert any(p.rate for p in plans) and any(p.hold for p in plans)
    slowest = max(p.stall + p.hold + (len(p.data()) / p.rate if p.rate else 0) for p in plans)
    assert slowest <= HostileConfig().max_stall + 1e-9  # every wait is bounded
    robots = [p for p in plans if "robots:misbehaves" in p.tags]
    assert {"reset", "stall", "cut", "trickle"} <= {p.shape for p in robots}


def payload(plan: Plan) -> bytes:
    """The body a client reads from an answer libcurl completes (chunks joined, gzip
    undone, a lying Content-Length obeyed)."""
    head, body = plan.head.lower(), plan.body
    if b"transfer-encoding: chunked" in head:
        out, rest = [], body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            n = int(size.split(b";")[0], 16)
            if not n:
                break
            out.append(rest[:n])
            rest = rest[n + 2:]
        body = b"".join(out)
    if plan.shape == "bomb":
        return b""  # spaces after "<html><body><p>bomb</p>"
    for _ in range(head.count(b"gzip")):
        body = gzip.decompress(body)
    length = re.search(rb"\ncontent-length: (\d+)", head)
    return body[: int(length[1])] if length and plan.shape == "lie_down" else body


def test_the_url_space_is_finite_and_stays_on_the_web():
    """A closure over every link and Location of every answer (three requests of each URL)
    ends, with links only to the web's hosts, its refused hosts or blocked addresses, and
    none into the robots.txt namespace."""
    config = HostileConfig(seed=5, hosts=3, pages=12, refused=2, port=8766)
    web = HostileWeb(config)
    ours = set(web.netlocs)
    allowed = ours | {config.refused_netloc(j) for j in range(config.refused)}
    seen, todo, cache = set(config.seeds()), list(config.seeds()), LinkCache()
    links = 0
    while todo:
        url = todo.pop()
        netloc, target = host_key(url), "/" + url.split("/", 3)[3]
        if netloc not in ours:
            continue
        for k in range(3):
            plan = web.plan(netloc, target, k)
            if plan.view != OK:
                continue
            found = []
            if 300 <= plan.status < 400:
                found += [resolve(m.decode("latin-1"), url) for m in
                          re.findall(rb"\nLocation: ([^\r\n]*)", plan.head)[-1:]]
            if 200 <= plan.status < 300:
                ctype = re.search(rb"\nContent-Type: [^\r\n]*charset=([^\r\n;]*)", plan.head)
                found += parse_html(payload(plan), url, cache,
                                    charset=ctype and ctype[1].decode("latin-1")).links
            for link in filter(None, found):
                links += 1
                key = host_key(link)
                assert key in allowed or key.rpartition(":")[0] in BLOCKED, link
                assert robots_source(key, "/" + link.split("/", 3)[3]) is None, link
                if link not in seen and key in ours:
                    seen.add(link)
                    todo.append(link)
    requested = {(host_key(u), u.split("/", 3)[3]) for u in seen}  # what the server sees
    per_host = collections.Counter(key for key, _ in requested)
    assert links > 2000 and len(per_host) == config.hosts
    # a page with each query, and leaves: junk hrefs and relative links from the few bases
    assert max(per_host.values()) < 1 + config.pages * (1 + len(QUERIES)) + 150


def test_a_robots_txt_redirects_only_to_robots_txt_aliases():
    # a campaign (seed 15) met an odd "Location: /p/0" header on a robots.txt's 301: libcurl
    # followed it, and the audit took the page's later fetch for a second request
    web = HostileWeb(HostileConfig(seed=15, hosts=40, pages=30, port=8766))
    targets = 0
    for netloc in web.netlocs:
        for target in ("/robots.txt", "/robots/0-0.txt", "/robots/3-2.txt"):
            for k in range(4):
                plan = web.plan(netloc, target, k)
                if not 300 <= plan.status < 400:  # a Location libcurl does not follow
                    continue
                for location in re.findall(rb"\nLocation: ([^\r\n]*)", plan.head):
                    targets += 1
                    path = "/" + (resolve(location.decode("latin-1"), f"http://{netloc}/")
                                  or "http://x/robots").split("/", 3)[3]
                    assert path.startswith("/robots"), (netloc, target, k, location)
    assert targets > 20


# --------------------------------------------------------------------------- server


def fetch_each(urls: list[str], **settings: object) -> list:
    """Fetch every URL with the crawler's fetcher, each as its own host (all at once)."""
    f = Fetcher(Settings(fetch_allow_net=["127.0.0.0/8"], fetch_timeout=5.0,
                         **settings).validate())
    try:
        f.submit([FetchJob(0, i, u, f"h{i}") for i, u in enumerate(urls)])
        got: dict[int, object] = {}
        deadline = time.monotonic() + 60
        while len(got) < len(urls) and time.monotonic() < deadline:
            r = f.get(timeout=0.1)
            if r is not None:
                got[r.job.index] = r
        return [got.get(i) for i in range(len(urls))]
    finally:
        f.close()


def test_the_server_sends_the_plans_and_logs_the_view_libcurl_has(tmp_path):
    config = HostileConfig(seed=11, hosts=3, pages=12).on_free_port()
    web = HostileWeb(config)
    asked = targets(config, leaves=40)
    log = tmp_path / "requests.tsv"
    with running(config, log) as server:
        results = fetch_each([f"http://{n}{t}" for n, t in asked], fetch_workers=48)
    assert server.requests == responses(log) >= len(asked)
    logged = collections.defaultdict(list)
    for r in read_log(log):
        logged[(r.netloc, r.target)].append(r)
    assert set(logged) == set(asked)
    shapes = collections.Counter()
    for (netloc, target), res in zip(asked, results, strict=True):
        *before, last = sorted(logged[(netloc, target)], key=lambda r: r.start)
        # more than one request: libcurl sent it again on a fresh connection, once
        assert all(b.reused and b.view == ERR for b in before) and len(before) <= 1
        plan = web.plan(netloc, target, len(before))
        assert res is not None, target
        assert (last.status, last.shape) == (plan.status, plan.shape)
        if last.view == OK:
            assert (res.status, res.error) == (plan.status, ""), (last, plan.tags)
        else:
            assert res.error and res.status == 0, (last, plan.tags)
        if plan.view == OK and not plan.timed:
            assert last.view == OK  # only a stall or a trickle may turn out an error
        if plan.shape == "plain" and last.view == OK and b"Content-Encoding" not in plan.head:
            assert res.body == plan.body  # byte for byte
        shapes[plan.shape] += 1
    assert len(shapes) >= 20  # most shapes met the real fetcher


def test_the_command_line_serves_and_prints_seeds(tmp_path):
    seeds = subprocess.run([PY, "-m", "bspcrawl", "testweb", "hostile", "--seeds", "--hosts",
                            "2", "--port", "9999"], capture_output=True, text=True, check=True)
    assert seeds.stdout == "http://127.1.0.1:9999/\nhttp://127.1.0.2:9999/\n"
    bad = subprocess.run([PY, "-m", "bspcrawl", "testweb", "hostile", "--refused", "51"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("bspcrawl: error: --refused")
    config = HostileConfig(seed=2, hosts=2, pages=5).on_free_port()
    log = tmp_path / "log.tsv"
    with serving(config, log):
        (home,) = fetch_each([config.seeds()[1]])
    assert home is not None
    (req,) = read_log(log)
    assert (req.netloc, req.target) == (config.netloc(1), "/")


# ---------------------------------------------------------------------------- audit


def req(target: str, start: float, kind: str, netloc: str = "127.1.0.1:8766",
        end: float | None = None) -> Request:
    status, view, shape, conn = kind.split("/")
    return Request(netloc, target, start, start + 0.01 if end is None else end, int(status),
                   view, shape, conn == "reused")


def test_repeated_requests_are_found_unless_an_answer_called_for_them():
    ok = [req("/p/1", 1, "503/ok/plain/new"), req("/p/1", 2, "429/ok/chunked/new"),
          req("/p/1", 3, "200/ok/plain/new"),  # two retries of a 503/429: allowed
          req("/p/2", 1, "200/err/reset/reused"), req("/p/2", 1.02, "200/ok/plain/new"),
          req("/robots.txt", 1, "503/ok/plain/new"), req("/robots.txt", 3, "0/err/cut/new"),
          req("/robots.txt", 5, "302/ok/rrefused/new"), req("/robots.txt", 7, "200/ok/plain/new"),
          req("/robots.txt", 1, "301/ok/rfollow/new", "127.1.0.2:8766"),
          req("/robots/1-0.txt", 1.1, "301/ok/rfollow/new", "127.1.0.3:8766"),
          req("/robots/1-0.txt", 1.2, "200/ok/plain/new", "127.1.0.2:8766")]
    assert repeated(ok, page_retries=2, robots_retries=3) == []
    found = repeated([
        req("/p/1", 1, "200/ok/plain/new"), req("/p/1", 2, "200/ok/plain/new"),  # after a 200
        req("/p/2", 1, "503/err/cut/new"), req("/p/2", 2, "200/ok/plain/new"),  # not a 503
        *(req("/p/3", t, "503/ok/plain/new") for t in range(4)),  # three retries
        req("/robots.txt", 1, "404/ok/plain/new", "127.1.0.2:8766"),  # a 4xx: final
        req("/robots.txt", 2, "200/ok/plain/new", "127.1.0.2:8766"),
        *(req(t, i / 10, "302/ok/rfollow/new", "127.1.0.3:8766") for i, t in enumerate(
            ["/robots.txt", *["/robots/2-1.txt"] * 5])),  # six redirects: final
        req("/robots.txt", 5, "200/ok/plain/new", "127.1.0.3:8766"),
        *(req("/robots.txt", t, "500/ok/plain/new", "127.1.0.4:8766") for t in range(5)),
    ], page_retries=2, robots_retries=3)
    assert len(found) == 6, found
    assert all(what in " ".join(found) for what in (
        "/p/1 [200", "/p/2 [200", "/p/3 [503", "more than 1 + 2", "127.1.0.2:8766/robots.txt",
        "127.1.0.3:8766/robots.txt", "more than 1 + 3"))


def test_overlapping_requests_to_one_host_are_found():
    fine = [req("/p/1", 1.0, "200/ok/plain/new", end=2.0),
            req("/p/2", 1.995, "200/ok/plain/new", end=3.0),  # within the slack
            req("/p/3", 1.5, "200/ok/plain/new", "127.1.0.2:8766", end=2.5),  # another host
            req("/robots/2-0.txt", 1.2, "200/ok/plain/new", end=1.3)]  # a hop from host 2
    assert overlapping(fine) == []
    found = overlapping([*fine, req("/p/4", 2.5, "200/ok/plain/new", end=2.6),
                         req("/robots/0-0.txt", 1.2, "200/ok/plain/new", end=1.3)])
    assert [f.split(" ")[0] for f in found] == ["http://127.1.0.1:8766/robots/0-0.txt",
                                                "http://127.1.0.1:8766/p/4"]
    # an answer the client gave up on ends when the server noticed: a little later
    gave_up = [req("/p/1", 1.0, "200/err/trickle/new", end=2.05),
               req("/p/2", 2.0, "200/ok/plain/new", end=3.0)]
    assert overlapping(gave_up) == []
    gave_up[0] = req("/p/1", 1.0, "200/err/trickle/new", end=2.2)
    assert len(overlapping(gave_up)) == 1


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    """A small finished crawl (P = 1) to damage."""
    tmp = tmp_path_factory.mktemp("crawl")
    site = Site({"/robots.txt": [(404, {}, b"")], "/": [page("/a", "/b")], "/a": [page()],
                 "/b": [(200, {"X-\xff": "\xe9"}, b"<p>odd header</p>")]})
    try:
        with crawl_here(tmp, [site.url + "/"]):
            pass
    finally:
        site.close()
    return tmp / "out"


def members(data: bytes) -> list[bytes]:
    """The gzip members of a WARC file, compressed, in order."""
    out = []
    while data:
        z = zlib.decompressobj(31)
        z.decompress(data)
        out.append(data[: len(data) - len(z.unused_data)])
        data = z.unused_data
    return out


def test_damaged_output_is_found(crawled, tmp_path):
    assert damaged(crawled) == []
    out = tmp_path / "out"
    shutil.copytree(crawled, out)
    rank = out / "rank-0000.h5"
    rank.write_bytes(rank.read_bytes()[:2000])  # a torn HDF5 file
    warc = sorted(out.glob("warc/*.warc.gz"))[0]
    parts = members(warc.read_bytes())
    for i, member in enumerate(parts):
        record = zlib.decompress(member, 31)
        if b"WARC-Type: response" in record and b"hello world" in record:
            z = zlib.compressobj(1, zlib.DEFLATED, 31)  # a body whose digest is wrong
            parts[i] = z.compress(record.replace(b"hello world", b"hellO world")) + z.flush()
            break
    else:
        raise AssertionError("no response record to damage")
    warc.write_bytes(b"".join(parts))
    (out / "warc" / "rank-0000-00009.warc.gz.open").write_bytes(b"")
    problems = damaged(out)
    joined = "\n".join(problems)
    assert "rank-0000.h5: h5py cannot read it" in joined
    assert "warcio check fails" in joined and "left unfinished" in joined
    assert len(problems) >= 3


def test_a_replaced_fetcher_is_found(crawled, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(crawled, out)
    with h5py.File(out / "rank-0000.h5", "r+") as f:
        stats = f["stats"][:]
        stats["fetcher/replaced"][-1] = 2
        f["stats"][:] = stats
    assert [p for p in damaged(out) if "fetcher/replaced is 2" in p]


def test_the_audit_reads_the_crawls_retries_and_finds_every_kind_of_problem(crawled,
                                                                            tmp_path):
    log = tmp_path / "requests.tsv"
    lines = ["127.1.0.1:8766\t/p/1\t1.0\t2.0\t503/ok/plain/new",
             "127.1.0.1:8766\t/p/1\t3.0\t3.5\t503/ok/plain/reused",
             "127.1.0.1:8766\t/p/1\t4.0\t4.5\t503/ok/plain/reused",  # politeness_retries=2
             "127.1.0.1:8766\t/p/1\t5.0\t5.5\t200/ok/plain/reused",
             "127.1.0.1:8766\t/p/2\t4.2\t4.3\t200/ok/plain/new"]  # while /p/1 is in flight
    log.write_text("".join(line + "\n" for line in lines))
    assert responses(log) == 5
    problems = audit(log, crawled)
    assert len(problems) == 2, problems
    assert "more than 1 + 2" in problems[0] and "two requests in flight" in problems[1]
    with h5py.File(crawled / "rank-0000.h5", "r") as f:  # the retries the audit went by
        assert json.loads(f.attrs["settings"])["politeness_retries"] == 2
    log.write_text("".join(line + "\n" for line in lines[:3] + lines[4:5]).replace(
        "4.2\t4.3", "6.0\t6.1"))
    assert audit(log, crawled) == []
