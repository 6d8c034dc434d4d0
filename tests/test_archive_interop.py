"""Our CDXJ, WARC and WACZ files as the archivists' tools read them: cdxj-indexer agrees
with our CDXJ line for line, pywb replays our pages byte for byte through it, and
``wacz validate`` accepts our WACZ.

pywb (``[test]`` extra) monkey-patches the process with gevent when imported, so it runs
in a child process (``tests/pywb_replay.py``), in-process there through its WSGI app.
"""

import json
import random
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import surt

from bspcrawl.index import cdxj, inspect
from bspcrawl.index.output import OutputError, prepare
from tests.archives import crawl_with_history
from tests.crawling import crawl, serve

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return crawl_with_history(tmp_path_factory.mktemp("interop"))


def indexer(out: Path) -> list[str]:
    """cdxj-indexer's sorted CDXJ of every WARC file of ``out``."""
    res = subprocess.run([BIN / "cdxj-indexer", "--sort",
                          *sorted(map(str, (out / "warc").glob("*.warc.gz")))],
                         capture_output=True, text=True, check=True, timeout=60)
    return res.stdout.splitlines()


def test_cdxj_index_agrees_with_cdxj_indexer_on_every_line(history):
    for out in (history.first, history.out):  # responses; then revisits (304s) too
        ours = (out / "indexes" / "index.cdxj").read_text().splitlines()
        theirs = indexer(out)
        assert len(ours) > 20 and ours == theirs
        parsed = [(key, ts, json.loads(data)) for key, ts, data in
                  (line.split(" ", 2) for line in ours)]
        assert all(len(ts) == 14 and {"offset", "length", "filename"} <= set(d)
                   for _, ts, d in parsed)
    assert any(d["mime"] == "warc/revisit" for _, _, d in parsed)


def test_every_rank_indexes_its_own_files_and_rank_0_merges_them(tmp_path):
    with serve(60, 4) as web:
        done = crawl(2, web.seeds(), tmp_path / "p2")
        assert done.returncode == 0, done.stderr
    out = tmp_path / "p2"
    parts = sorted(p.name for p in (out / "indexes").glob("rank-*.cdxj"))
    assert parts == ["rank-0000-00000.cdxj", "rank-0001-00000.cdxj"]
    assert (out / "indexes" / "index.cdxj").read_text().splitlines() == indexer(out)


def test_a_warc_file_without_its_part_is_indexed_from_its_records(history, tmp_path):
    out = history.out
    merged = (out / "indexes" / "index.cdxj").read_text()
    for part in (out / "indexes").glob("rank-*.cdxj"):
        part.unlink()  # as if a killed writer's file had been finished on resume
    assert cdxj.merge(out).read_text() == merged
    assert sorted(p.name for p in (out / "indexes").iterdir()) == [
        "index.cdxj", "rank-0000-00000.cdxj"]


def test_the_output_directory_owns_indexes(history):
    with pytest.raises(OutputError, match="earlier crawl"):
        prepare(history.out, overwrite=False)  # not "files that are not a crawl's"


def test_url_keys_are_surt(monkeypatch):
    assert cdxj.url_key("http://www.Example.com:80/A?b=2&a=1") == "com,example)/a?a=1&b=2"
    assert cdxj.url_key("http://127.1.0.1:8080/b/") == "1,0,1,127:8080)/b"
    monkeypatch.setattr(cdxj, "_surt", None)  # %-escapes are keyed without the package
    assert cdxj.url_key("http://a.example/Caf%C3%A9%2Fx%20y?b=%41&a%26c") == \
        "example,a)/caf%c3%a9/x%20y?a&b=a&c"
    assert cdxj.timestamp14(1704164645.999) == "20240102030405"


def test_pywb_replays_our_pages_byte_for_byte(history, tmp_path):
    """A sample of the first crawl's pages, and the changed page's new version in the
    recrawl, each crawl a pywb collection (their WARC files have the same names)."""
    sample = sorted(history.ok_urls)[:: max(1, len(history.ok_urls) // 8)]
    wanted = [("first", history.first, u, v) for u in sample
              for v, _ in inspect.versions(history.first, u)]
    wanted += [("second", history.out, history.changed_url, v)
               for v, _ in inspect.versions(history.out, history.changed_url)
               if v.time > wanted[-1][3].time]
    request = [(name, cdxj.timestamp14(v.time), u) for name, _, u, v in wanted]
    res = subprocess.run(
        [sys.executable, "-m", "tests.pywb_replay", str(tmp_path), json.dumps(request)] +
        [f"{name}={out / 'indexes' / 'index.cdxj'},{out / 'warc'}"
         for name, out in (("first", history.first), ("second", history.out))],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).parent.parent)
    assert res.returncode == 0, res.stderr[-2000:]
    served = json.loads(res.stdout.splitlines()[-1])
    assert len(served) == len(request) >= 9 and request[-1][0] == "second"
    for (_, out, url, version), (status, body_hex) in zip(wanted, served, strict=True):
        found = dict((v.time, p) for v, p in inspect.versions(out, url))
        assert status == 200
        assert bytes.fromhex(body_hex) == inspect.body(version, found[version.time]), url


def test_wacz_export_passes_wacz_validate(history, tmp_path):
    wacz = tmp_path / "crawl.wacz"
    res = subprocess.run([BIN / "bspcrawl", "export", str(history.first), "--wacz", str(wacz)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    with zipfile.ZipFile(wacz) as z:
        names = set(z.namelist())
        assert {"datapackage.json", "datapackage-digest.json", "pages/pages.jsonl",
                "indexes/index.cdxj", "archive/rank-0000-00000.warc.gz"} <= names
        assert z.getinfo("archive/rank-0000-00000.warc.gz").compress_type == zipfile.ZIP_STORED
        pages = z.read("pages/pages.jsonl").decode().splitlines()
        assert json.loads(pages[0])["format"] == "json-pages-1.0"
        assert any(json.loads(p).get("title") == "Hostile page" for p in pages[1:])
    check = [BIN / "wacz", "validate", "-f", str(wacz)]
    res = subprocess.run(check, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 0 and "is valid" in res.stdout, res.stdout + res.stderr
    # the validator does check: a WACZ whose WARC differs from its hash is refused
    bad = tmp_path / "bad.wacz"
    with zipfile.ZipFile(wacz) as z, zipfile.ZipFile(bad, "w") as w:
        for item in z.infolist():
            data = z.read(item)
            w.writestr(item, data + b"\0" if item.filename.startswith("archive/") else data)
    res = subprocess.run(check[:-1] + [str(bad)], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert res.returncode != 0 and "invalid" in res.stdout


def test_export_of_a_non_crawl_is_one_error_line(tmp_path):
    res = subprocess.run([BIN / "bspcrawl", "export", str(tmp_path), "--wacz",
                          str(tmp_path / "x.wacz")], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stderr.startswith("bspcrawl: error: ")
    assert len(res.stderr.splitlines()) == 1 and not (tmp_path / "x.wacz").exists()


TRICKY = [
    "http://a.example/", "https://www3.A.example:443/x/Y/?q", "http://a.example/a/?",
    "http://a.example/a?b=2&a=1&a&a=", "http://a.example/a?z&y=1&y", "http://a.example//a//b/",
    "http://a.example/a/./b/../c", "http://a.example/%41%2541?%7e=1", "http://a.example/é?ü",
    "http://a.example/x?jsessionid=0123456789abcdef0123456789ABCDEF&a=1",
    "http://a.example/x?PHPSESSID=0123456789abcdef0123456789ABCDEF",
    "http://a.example/x?a=1&sid=0123456789abcdef0123456789ABCDEF",
    "http://a.example/x?cfid=1&cftoken=2&b", "http://a.example/(a(0123456789abcdefghijklmn))/p.aspx",
    "http://a.example/(0123456789abcdefghijklmn)/p.aspx?x", "http://user:pw@a.example:8080/",
    "http://[::1]:81/a", "http://10.0.0.1/a", "http://0x7f.1/a", "http://a.example/a b",
    "http://a.example/a#frag", "http://a.example/?", "http://a.example/a?&&", "ftp://a.example/x",
    "http://a.example/A;p=1,2/~u/!$'()*+:@", "http://xn--nxasmq6b.example/", "http://a..b.example./",
    "http://www.1.2.3.4/", "http://1password.example/", "http://0day.example/", "http://12345/",
    "http://a.example:0/", "http://a.example:99999/", "http://www2.a.example/",
    "http://wwwx.example/", "http://a.example:080/", "http://127.1/", "https://a.example:80/",
    "http://a-b.c.example/x", "http://017.0.0.1/", "http://256.1.1.1/", "http://1.2.3.4.5/",
    "http://a.example/a%2Fb%2f", "http://a.example/%2e%2e/x", "http://a.example/x%3Fy?a%26b=1&a",
    "http://a.example/%E6%9D%B1%zz%", "http://a.example/s%69d=1", "http://a.example/%2F%2Fa",
]


def surt_key(url: str) -> str:
    """surt's key, or the URL itself where surt cannot read it (as ``url_key`` does)."""
    try:
        return surt.surt(url)
    except ValueError:
        return url


@pytest.mark.parametrize("url", TRICKY)
def test_url_keys_agree_with_surt_on_tricky_urls(url):
    assert cdxj.url_key(url) == surt_key(url)


def test_url_keys_agree_with_surt_on_a_crawl(history):
    urls = [u for u, _ in inspect.urls(history.first)]
    assert len(urls) > 30
    assert [cdxj.url_key(u) for u in urls] == [surt_key(u) for u in urls]


def test_url_keys_agree_with_surt_on_random_urls():
    """Mostly URLs of the fast path (``url_key`` computes their key itself, %-escapes
    too), some not."""
    rng = random.Random(7)
    labels = ["www", "www7", "a", "b-c", "0", "1", "017", "255", "256", "example", "xn--d1a",
              "sid", "B", "ü", ""]
    paths = ["/", "a", "A", "b=1", ".", "..", "?", "&", "=", ";", ":", "@", "+", "~", "x.html",
             "jsessionid=", "sid=", "cfid=", ".aspx", "#", " ", "é", "0123456789abcdef"]
    escapes = ["%41", "%2F", "%2f", "%3F", "%3f", "%25", "%2541", "%252F", "%C3%A9", "%e6%9d%b1",
               "%20", "%23", "%26", "%3D", "%2E", "%2e%2e", "%7E", "%5C", "%00", "%", "%4", "%zz"]
    fast = 0
    for _ in range(6000):
        host = ".".join(rng.choices(labels, [4] * 12 + [1] * 3, k=rng.randint(1, 4)))
        port = rng.choice(["", "", ":80", ":443", ":8080", ":0", ":070000"])
        path = "/" + "".join(rng.choices(paths + escapes, [4] * 19 + [1] * 4 + [2] * 22,
                                         k=rng.randint(0, 8)))
        url = f"{rng.choice(['http', 'https'])}://{host}{port}{path}"
        assert cdxj.url_key(url) == surt_key(url), url
        fast += bool(cdxj._host_key(host + port, "80"))
    assert fast > 1000
