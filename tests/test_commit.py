"""The commit pipeline on bodies written here (no network): links, robots directives,
redirects, non-HTML, revisits restored from the archive; rows, link graph and postings
read back from the rank file."""

from __future__ import annotations

import random
from concurrent import futures
from pathlib import Path

import h5py
import pytest
import xxhash
from warcio.archiveiterator import ArchiveIterator

from bspcrawl import analysis, commit
from bspcrawl.analysis import LinkKeys, Pool
from bspcrawl.commit import Committer, charset, is_html
from bspcrawl.frontier import Frontier
from bspcrawl.index.archive import Archive
from bspcrawl.index.store import RankStore, rank_path
from bspcrawl.messages import FETCHED, FRESH, NOT_MODIFIED, FetchJob, FetchResult, Link
from bspcrawl.settings import Settings
from bspcrawl.urls import fingerprint

T0 = 1_704_067_200.0
PAGE = (b"<html><head><title>Greeting</title></head><body>hello world hello "
        b'<a href="/a#frag">a</a> <a href="b?x=1">b</a> <a href="http://other.test/c#x">c</a> '
        b'<a href="mailto:me@a.test">m</a> <a href="/a">again</a></body></html>')
PAGE_LINKS = ["http://a.test/a", "http://a.test/dir/b?x=1", "http://other.test/c"]
ANCHORS = dict(zip(PAGE_LINKS, "abc", strict=True))  # each link's first anchor text


def records(folder: Path) -> list[tuple[str, str, str | None]]:
    """The type, URL and payload digest of each WARC record in ``folder``, in order."""
    found = []
    for path in sorted(folder.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            found += [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI"),
                       r.rec_headers.get_header("WARC-Payload-Digest"))
                      for r in ArchiveIterator(fh) if r.rec_type != "warcinfo"]
    return found


def sent(urls: list[str], depth: int, hops: int = 0) -> list[Link]:
    """The links a commit of PAGE sends: with their anchor text."""
    return [Link(u, depth, hops, ANCHORS[u]) for u in urls]


class Rank:
    """One rank's archive, store and committer in ``out``."""

    def __init__(self, out: Path, warc: bool = False, revisits: bool = False) -> None:
        self.out = out
        settings = Settings().validate()
        self.frontier = Frontier(settings)
        self.archive = Archive(out, 0, warc=warc, revisits=revisits)
        self.store = RankStore(out, 0, 1, {}, flush_pages=1000, archive=self.archive)
        self.committer = Committer(self.archive, self.store, settings.agent_token,
                                   LinkKeys(settings.url_strip_params))
        self.seq = 0

    def job(self, url: str, depth: int = 0, hops: int = 0) -> FetchJob:
        self.seq += 1
        return FetchJob(self.seq, 0, url, "a.test:80", depth=depth, hops=hops,
                        fp=fingerprint(url))

    def commit(self, url: str = "http://a.test/dir/page", status: int = 200,
               body: bytes = PAGE, content_type: str = "text/html", depth: int = 2,
               hops: int = 0, **kw: object) -> list[Link]:
        result = FetchResult(self.job(url, depth, hops), status=status, body=body,
                             content_type=content_type, started=T0 + self.seq, **kw)
        return self.committer.commit(result)

    def read(self) -> dict:
        """Rows, out-links and postings ({doc: {term: tf}}) of the closed store."""
        self.store.close(1)
        with h5py.File(rank_path(self.out, 0)) as f:
            pages = {name: f[f"pages/{name}"][()] for name in f["pages"]}
            for name in ("url", "error", "content_type", "redirect"):
                pages[name] = f[f"pages/{name}"].asstr()[()].tolist()
            off, targets = f["links/offsets"][()], f["links/targets"][()]
            links = [targets[off[i]:off[i + 1]].tolist() for i in range(len(off) - 1)]
            s = f["search"]
            word = dict(zip(s["vocab_hash"][()].tolist(),
                            (bytes(t).decode() for t in s["vocab"][()]), strict=True))
            terms = [word.get(h) for h in s["terms"][()].tolist()]
            toff, docs, tf = s["offsets"][()], s["docs"][()], s["tf"][()]
        postings: dict[int, dict[str, int]] = {}
        for i, term in enumerate(terms):
            for d, n in zip(docs[toff[i]:toff[i + 1]].tolist(), tf[toff[i]:toff[i + 1]].tolist(),
                            strict=True):
                if n:
                    postings.setdefault(d, {})[term] = n
        return {"pages": pages, "links": links, "postings": postings}


def fps(urls: list[str]) -> list[int]:
    return [fingerprint(u) for u in urls]


def test_an_html_page_yields_its_links_terms_and_row(tmp_path):
    rank = Rank(tmp_path)
    links = rank.commit(depth=2, hops=1)
    assert links == sent(PAGE_LINKS, 3)
    got = rank.read()
    p = got["pages"]
    assert p["url"] == ["http://a.test/dir/page"] and p["doc_id"].tolist() == [0]
    assert p["status"].tolist() == [200] and p["error"] == [""]
    assert p["depth"].tolist() == [2] and p["seq"].tolist() == [1]
    assert p["length"].tolist() == [len(PAGE)] and p["content_type"] == ["text/html"]
    assert p["content_fp"].tolist() == [xxhash.xxh3_64_intdigest(PAGE)]
    assert p["url_fp"].tolist() == [fingerprint("http://a.test/dir/page")]
    assert p["redirect"] == [""] and p["revisit"].tolist() == [FETCHED]
    assert got["links"] == [fps(PAGE_LINKS)]
    terms = got["postings"][0]
    assert terms["hello"] == 2 and terms["world"] == 1 and terms["greeting"] == 1
    assert "href" not in terms and "html" not in terms  # text, not markup


def test_x_robots_tag_and_meta_robots(tmp_path):
    meta_none = PAGE.replace(b"<head>", b'<head><meta name="robots" content="none">')
    meta_noindex = PAGE.replace(b"<head>", b'<head><meta name="ROBOTS" content="noindex">')
    cases = [  # (X-Robots-Tag, body, links kept, terms kept)
        ("nofollow", PAGE, False, True),
        ("noindex", PAGE, True, False),
        ("noindex, nofollow", PAGE, False, False),
        ("none", PAGE, False, False),
        ("bspcrawl: nofollow", PAGE, False, True),
        ("otherbot: noindex, nofollow", PAGE, True, True),  # another crawler's
        ("", meta_none, False, False),
        ("", meta_noindex, True, False),
        ("", PAGE, True, True),
    ]
    rank = Rank(tmp_path)
    for tag, body, follow, _ in cases:
        headers = {"x-robots-tag": tag} if tag else {}
        rank.committer.sent.clear()  # the same links each time: send them again
        links = rank.commit(body=body, headers=headers)
        assert links == (sent(PAGE_LINKS, 3) if follow else []), tag
    got = rank.read()
    for doc, (tag, _, follow, index) in enumerate(cases):
        assert got["links"][doc] == (fps(PAGE_LINKS) if follow else []), tag
        assert ("hello" in got["postings"].get(doc, {})) == index, tag
    assert got["pages"]["doc_id"].tolist() == list(range(len(cases)))  # all stored


def test_a_redirect_yields_its_target_one_hop_further(tmp_path):
    rank = Rank(tmp_path)
    links = rank.commit(url="http://a.test/dir/old", status=301, body=PAGE,
                        location="../new?q=1#top", depth=4, hops=2)
    assert links == [Link("http://a.test/new?q=1", 4, 3)]  # same depth, one more hop
    assert rank.commit(url="http://a.test/x", status=302, body=b"", content_type="",
                       location="http://[bad") == []  # an unresolvable Location: no link
    got = rank.read()
    assert got["pages"]["redirect"] == ["http://a.test/new?q=1", ""]
    assert got["pages"]["status"].tolist() == [301, 302]
    assert got["links"] == [[], []]  # a redirect is no out-link; its body is not parsed
    assert got["postings"] == {}


def test_non_html_and_failed_fetches_yield_no_links(tmp_path):
    rank = Rank(tmp_path)
    assert rank.commit(content_type="application/pdf") == []
    assert rank.commit(content_type="text/plain") == []
    assert rank.commit(status=404) == []
    assert rank.commit(status=0, body=b"", content_type="", error="timeout") == []
    assert rank.commit(content_type="") == sent(PAGE_LINKS, 3)  # sniffed
    got = rank.read()
    assert got["links"] == [[], [], [], [], fps(PAGE_LINKS)]
    assert set(got["postings"]) == {4}
    assert got["pages"]["error"] == ["", "", "", "timeout", ""]
    assert rank.store.errors == 1 and rank.store.pages_ok == 3


def test_the_content_type_charset_decodes_the_body(tmp_path):
    rank = Rank(tmp_path)
    body = "<html><body>привет мир</body></html>".encode("koi8-r")
    rank.commit(body=body, content_type="text/html; charset=KOI8-R")
    rank.commit(body=body, content_type="text/html")  # undeclared: windows-1252
    got = rank.read()
    assert {"привет", "мир"} <= set(got["postings"][0])
    assert "привет" not in got["postings"][1]


def test_a_304_revisit_is_parsed_like_the_original(tmp_path):
    rank = Rank(tmp_path, warc=True, revisits=True)
    url = "http://a.test/dir/page"
    first = rank.commit(url=url, headers={"etag": '"v1"', "content-type": "text/html"})
    rank.archive.close()  # the WARC file with the original is finished (and below: open)
    job = rank.job(url, depth=2)
    assert rank.archive.plan([job], T0 + 100) == []  # not fresh: revalidated
    assert job.headers == ('If-None-Match: "v1"',)
    result = FetchResult(job, status=304, headers={"etag": '"v1"'}, started=T0 + 100)
    rank.committer.sent.clear()  # to see the links parsed again (not sent twice otherwise)
    again = rank.committer.commit(result)
    assert result.revisit == NOT_MODIFIED and result.body == PAGE
    assert again == first == sent(PAGE_LINKS, 3)
    got = rank.read()
    p = got["pages"]
    assert p["status"].tolist() == [200, 304]
    assert p["revisit"].tolist() == [FETCHED, NOT_MODIFIED]
    assert p["content_fp"][0] == p["content_fp"][1] == xxhash.xxh3_64_intdigest(PAGE)
    assert got["links"][0] == got["links"][1] == fps(PAGE_LINKS)
    assert got["postings"][0] == got["postings"][1]
    assert rank.store.bytes == len(PAGE)  # a revisit's restored body is not received bytes
    versions = rank.archive.history.versions(fingerprint(url))
    assert [v.status for v in versions] == [200, 304]
    assert versions[0].warc_offset == versions[1].warc_offset  # the revisit refers to it


def test_a_fresh_page_is_restored_and_parsed_without_a_fetch(tmp_path):
    rank = Rank(tmp_path, warc=True, revisits=True)
    url = "http://a.test/dir/page"
    rank.commit(url=url, headers={"cache-control": "max-age=3600",
                                  "content-type": "text/html; charset=utf-8"})
    rank.archive.close()
    job = rank.job(url, depth=2)
    (fresh,) = rank.archive.plan([job], T0 + 60)
    assert fresh.job is job and fresh.revisit == FRESH and fresh.status == 0
    rank.committer.sent.clear()  # to see the links parsed again (not sent twice otherwise)
    assert rank.committer.commit(fresh) == sent(PAGE_LINKS, 3)
    assert (fresh.status, fresh.content_type) == (200, "text/html; charset=utf-8")
    got = rank.read()
    assert got["pages"]["revisit"].tolist() == [FETCHED, FRESH]
    assert got["links"][1] == fps(PAGE_LINKS)
    assert len(rank.archive.history.versions(fingerprint(url))) == 1  # nothing fetched


def test_a_304_restores_a_body_from_the_warc_file_being_written(tmp_path):
    rank = Rank(tmp_path, warc=True, revisits=True)
    url = "http://a.test/dir/page"
    rank.commit(url=url, headers={"etag": '"v1"'})
    job = rank.job(url, depth=2)
    rank.archive.plan([job], T0 + 100)
    result = FetchResult(job, status=304, headers={"etag": '"v1"'}, started=T0 + 100)
    rank.committer.sent.clear()
    assert rank.committer.commit(result) == sent(PAGE_LINKS, 3)


def test_a_304_without_an_archived_body_is_committed_bodiless(tmp_path):
    rank = Rank(tmp_path, warc=False, revisits=True)
    result = FetchResult(rank.job("http://a.test/x"), status=304, started=T0)
    assert rank.committer.commit(result) == []
    assert result.revisit == NOT_MODIFIED and result.body == b""
    assert rank.read()["pages"]["revisit"].tolist() == [NOT_MODIFIED]


def result(content_type: str = "", body: bytes = b"") -> FetchResult:
    return FetchResult(FetchJob(0, 0, "http://a.test/", "a.test:80"), status=200,
                       content_type=content_type, body=body)


@pytest.mark.parametrize(("content_type", "body", "html"), [
    ("text/html", b"", True),
    ("TEXT/HTML; charset=utf-8", b"%PDF", True),
    ("application/xhtml+xml", b"", True),
    ("application/pdf", b"<html><body>", False),
    ("text/plain", b"<html>", False),
    ("", b"<!DOCTYPE html><HTML lang=en>", True),
    ("", b" " * 1019 + b"<html>", True),
    ("", b" " * 1020 + b"<html>", False),  # sniffed in the first 1024 bytes only
    ("", b"%PDF-1.7", False),
    ("", b"", False),
])
def test_is_html(content_type, body, html):
    assert is_html(result(content_type, body)) is html


@pytest.mark.parametrize(("content_type", "expected"), [
    ("text/html; charset=UTF-8", "UTF-8"),
    ('text/html; Charset="iso-8859-1"', "iso-8859-1"),
    ("text/html;charset=koi8-r;format=flowed", "koi8-r"),
    ("text/html; format=flowed; CHARSET = utf-8 ", "utf-8"),
    ("text/html", None),
    ("text/html; charset=", None),
    ('text/html; charset=""', None),
    ("charset=utf-8", None),  # the media type, not a parameter
    ("", None),
])
def test_charset(content_type, expected):
    assert charset(content_type) == expected


def test_a_link_flood_is_cut_at_max_outlinks_in_document_order(tmp_path):
    # issue 14: one 2 MiB page added about 144,000 URLs
    rank = Rank(tmp_path)
    rank.committer.max_outlinks = 2
    assert rank.commit() == sent(PAGE_LINKS[:2], 3)
    assert rank.committer.stats["commit/outlinks_cut"] == 1
    assert rank.read()["links"] == [fps(PAGE_LINKS[:2])]


def test_links_to_too_many_hosts_are_cut_in_document_order(tmp_path):
    # issue 14: a page of links to 114,000 subdomains added them all to the host directory
    rank = Rank(tmp_path)
    rank.committer.max_hosts = 1
    assert rank.commit() == sent(PAGE_LINKS[:2], 3)  # a.test twice, not other
    assert rank.committer.stats["commit/hosts_cut"] == 1


def test_a_link_is_sent_once_unless_it_comes_again_shallower(tmp_path, monkeypatch):
    rank = Rank(tmp_path)
    assert rank.commit() == sent(PAGE_LINKS, 3)  # the job is at depth 2
    assert rank.commit(url="http://a.test/dir/other") == []  # the same links: known
    assert rank.committer.stats["commit/links_known"] == 3
    shallower = rank.commit(depth=0)
    assert shallower == sent(PAGE_LINKS, 1)  # their depth may change their fate
    monkeypatch.setattr(commit, "SENT_MEMO", 2)  # full: forgotten, sent again
    assert len(rank.commit()) == 3 and len(rank.commit()) == 3


def test_link_keys_come_from_the_memo_as_the_frontier_gives_them(tmp_path, monkeypatch):
    rank = Rank(tmp_path)
    keys = rank.committer.keys
    rng = random.Random(3)
    urls = [f"http://a.test/p{i}?utm_source=x&q={i % 4}" for i in range(12)]
    pages = [rng.sample(urls, rng.randint(0, 8)) for _ in range(40)]
    for memo in (analysis.KEY_MEMO, 5):  # (past 5 entries the memo is cleared)
        monkeypatch.setattr(analysis, "KEY_MEMO", memo)
        for page in pages:
            assert keys(page).tolist() == rank.frontier.fingerprints(page).tolist()


def test_pages_analysed_by_workers_commit_as_pages_analysed_at_their_commit(tmp_path):
    # the same rows, links, postings and WARC records, in the same order, with a pool of
    # workers as without; a result discarded instead of committed leaves nothing behind
    bodies = [PAGE, PAGE.replace(b"hello", b"bye"), b"%PDF-1.4", PAGE + b"<p>more words</p>"]
    types = ["text/html", "text/html", "application/pdf", "text/html"]
    read = []
    for run, workers in enumerate([0, 1]):
        rank = Rank(tmp_path / str(run), warc=True)
        if workers:
            rank.committer.pool = Pool(workers, Settings().url_strip_params,
                                       rank.committer.stats)
            futures.wait(rank.committer.pool.starting)  # (a crawl does not wait)
        results = [FetchResult(rank.job(f"http://a.test/p{i}"), status=200, body=body,
                               content_type=ct, started=T0 + i)
                   for i, (body, ct) in enumerate(zip(bodies, types, strict=True))]
        dropped = FetchResult(rank.job("http://a.test/gone"), status=200, body=PAGE,
                              content_type="text/html")
        rank.committer.prepare([*results[:2], dropped])
        rank.committer.prepare(results[2:])
        rank.committer.discard(dropped)
        links = [rank.committer.commit(r) for r in results]
        assert not rank.committer.ahead
        assert rank.committer.stats["analysis/ahead"] == 3 * workers  # the HTML pages
        rank.committer.close()
        rank.archive.close()
        read.append((links, rank.read(), records(tmp_path / str(run) / "warc")))
    (links0, got0, warc0), (links1, got1, warc1) = read
    assert warc0 == warc1 and len(warc0) == 2 * len(results)
    assert links0 == links1 and got0["links"] == got1["links"]
    assert got0["postings"] == got1["postings"] and len(got0["postings"]) == 3
    for name, column in got0["pages"].items():
        assert list(column) == list(got1["pages"][name]), name
