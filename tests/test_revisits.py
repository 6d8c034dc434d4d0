"""Revisits, history and WARC (issue 7): crawl testweb at epoch 0, recrawl it at epoch 1.

Unchanged pages come back as 304 (or are not fetched while their Expires is ahead),
changed ones are fetched whole, the history holds both versions and ``--at`` picks the
right one on each side of the boundary; the WARC files pass ``warcio check`` and
``warcio index`` and hold the server's bodies byte for byte.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import h5py
import pytest
import xxhash
from warcio.archiveiterator import ArchiveIterator

from bspcrawl.index.inspect import parse_time
from bspcrawl.index.output import OutputError
from bspcrawl.messages import FETCHED, FRESH, NOT_MODIFIED
from bspcrawl.testweb import free_port
from tests.crawling import PY, UNPACED, crawl, serve

PAGES, HOSTS = 400, 8
WARCIO = str(Path(PY).parent / "warcio")


def pages(out: Path) -> dict[str, tuple[int, int, int]]:
    """url -> (status, revisit, content_fp) of a crawl."""
    with h5py.File(out / "crawl.h5") as f:
        p = f["pages"]
        return {u: (s, r, c) for u, s, r, c in zip(
            p["url"].asstr()[:], p["status"][:].tolist(), p["revisit"][:].tolist(),
            p["content_fp"][:].tolist(), strict=True)}


def inspect(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "bspcrawl", "inspect", str(out), *args],
                          capture_output=True, timeout=60)


def history_times(out: Path, url: str) -> list[tuple[float, int]]:
    """(time, status) of the versions ``inspect --history`` lists, via the HDF5 files."""
    from bspcrawl.index.inspect import versions

    return [(v.time, v.status) for v, _ in versions(out, url)]


@pytest.fixture(scope="module")
def epochs(tmp_path_factory):
    """Crawl epoch 0 on P = 2, recrawl epoch 1 on P = 1 (the share moves between ranks)."""
    base = tmp_path_factory.mktemp("epochs")
    opts = {"port": free_port(HOSTS), "expires": 0.2, "change": 0.3}
    with serve(PAGES, HOSTS, epoch=0, **opts) as web0:
        seeds = web0.seeds()
        done = crawl(2, seeds, base / "e0")
        assert done.returncode == 0, done.stderr
    with serve(PAGES, HOSTS, epoch=1, **opts) as web1:
        done = crawl(1, seeds, base / "e1", "--recrawl", str(base / "e0"))
        assert done.returncode == 0, done.stderr
    return base, web0, web1


def test_recrawl_fetches_only_what_changed(epochs):
    base, web0, web1 = epochs
    before, after = pages(base / "e0"), pages(base / "e1")
    assert set(after) == set(before)  # the same web is reached: 304 bodies are parsed
    kinds = {FETCHED: 0, NOT_MODIFIED: 0, FRESH: 0}
    for url, (status, revisit, content) in after.items():
        page = web1.resource(url)
        if before[url][0] != 200 or not 0 <= page < web1.n_pages:
            assert revisit == FETCHED
            continue
        if web1.expiring[page]:
            assert (status, revisit, content) == (200, FRESH, before[url][2]), url
        elif web1.version[page] == web0.version[page]:
            assert (status, revisit, content) == (304, NOT_MODIFIED, before[url][2]), url
        else:
            assert (status, revisit) == (200, FETCHED), url
            assert content == xxhash.xxh3_64_intdigest(web1.html(page)) != before[url][2]
        kinds[revisit] += 1
    assert min(kinds.values()) >= 10, kinds
    summary = inspect(base / "e1", "--json")
    assert summary.returncode == 0
    assert b'"not_modified": %d' % kinds[NOT_MODIFIED] in summary.stdout
    assert b'"fetches_saved": %d' % kinds[FRESH] in summary.stdout


def test_history_holds_both_versions_and_at_picks_by_time(epochs):
    base, web0, web1 = epochs
    after = pages(base / "e1")
    changed = next(u for u, (s, r, _) in after.items()
                   if s == 200 and r == FETCHED and web1.version[web1.resource(u)] == 1)
    same = next(u for u, (_, r, _) in after.items() if r == NOT_MODIFIED)
    for url, statuses in ((changed, [200, 200]), (same, [200, 304])):
        page = web1.resource(url)
        (t0, s0), (t1, s1) = history_times(base / "e1", url)
        assert [s0, s1] == statuses and t0 < t1
        listed = inspect(base / "e1", "--history", url)
        assert listed.returncode == 0 and b"2 versions" in listed.stdout
        for at, html in ((t0 - 3600, web0), (t0 + 1e-3, web0), ((t0 + t1) / 2 - 1e-3, web0),
                         ((t0 + t1) / 2 + 1e-3, web1), (t1 - 1e-3, web1), (t1 + 3600, web1)):
            got = inspect(base / "e1", "--body", url, "--at", f"@{at}")
            assert got.returncode == 0, got.stderr
            assert got.stdout == html.html(page), (url, at)
        assert inspect(base / "e1", "--body", url).stdout == web1.html(page)
        assert inspect(base / "e0", "--body", url).stdout == web0.html(page)


def test_warc_files_pass_warcio_and_hold_the_bodies_sent(epochs):
    base, web0, web1 = epochs
    files = sorted(base.glob("e*/warc/*.warc.gz"))
    assert len(files) == 3  # two ranks at epoch 0, one at epoch 1
    for path in files:
        assert subprocess.run([WARCIO, "check", str(path)], capture_output=True).returncode == 0
        index = subprocess.run([WARCIO, "index", str(path)], capture_output=True, text=True)
        assert index.returncode == 0 and '"warc-type": "response"' in index.stdout
        web = web0 if "e0" in path.parts[-3] else web1
        kinds = set()
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                kinds.add(record.rec_type)
                if record.rec_type != "response" or record.http_headers.get_statuscode() != "200":
                    continue
                page = web.resource(record.rec_headers.get_header("WARC-Target-URI"))
                if 0 <= page < web.n_pages:
                    assert record.raw_stream.read() == web.html(page)
        assert kinds >= ({"warcinfo", "response", "request"}
                         | ({"revisit"} if "e1" in path.parts[-3] else set()))


def test_no_warc_keeps_history_without_bodies(tmp_path):
    with serve(60, 3) as web:
        done = crawl(1, web.seeds(), tmp_path / "plain", "--no-warc")
        assert done.returncode == 0, done.stderr
        again = subprocess.run(  # no --seeds: the previous crawl's own
            [PY, "-m", "bspcrawl", "run", "--recrawl", str(tmp_path / "plain"), "--out",
             str(tmp_path / "again"), *UNPACED, "--allow-net", "127.0.0.0/8", "--progress",
             "none"], capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
    assert set(pages(tmp_path / "again")) == set(pages(tmp_path / "plain"))
    assert not (tmp_path / "plain" / "warc").exists()
    assert {r for _, r, _ in pages(tmp_path / "again").values()} == {FETCHED}  # no bodies
    url = next(iter(pages(tmp_path / "plain")))
    assert len(history_times(tmp_path / "again", url)) == 2
    failed = inspect(tmp_path / "plain", "--body", url)
    assert failed.returncode == 2 and b"no body was kept" in failed.stderr
    rank_file = tmp_path / "plain" / "rank-0000.h5"

    def refused(out: str, why: str) -> None:
        """A recrawl of "plain" into *out* ends with one line saying *why*, writing nothing."""
        done = subprocess.run(
            [PY, "-m", "bspcrawl", "run", "--recrawl", str(tmp_path / "plain"), "--out",
             str(tmp_path / out), "--allow-net", "127.0.0.0/8", "--progress", "none"],
            capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert why in done.stderr and not (tmp_path / out).exists()

    with h5py.File(rank_file, "r+") as f:  # validators in an older bspcrawl's layout
        f["validators"].attrs["version"] = 1
    refused("older", "bspcrawl-validators")
    with rank_file.open("r+b") as f:  # cut short: a full disk, a copy stopped
        f.truncate(rank_file.stat().st_size // 2)
    refused("after", "cannot read that crawl")


def test_bad_recrawl_and_inspect_input_is_one_line(tmp_path):
    (tmp_path / "seeds").write_text("http://127.0.0.1:9/\n")
    run = subprocess.run([PY, "-m", "bspcrawl", "run", "--seeds", str(tmp_path / "seeds"),
                          "--out", str(tmp_path / "o"), "--recrawl", str(tmp_path)],
                         capture_output=True, text=True)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "crawl.h5" in run.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("text", "unix"), [
    ("@1704067200.5", 1704067200.5), ("2024", 1704067200), ("20240102", 1704153600),
    ("20240102030405", 1704164645), ("2024-01-02T03:04:05Z", 1704164645),
    ("2024-01-02T04:04:05+01:00", 1704164645), ("2024-01-02 03:04:05", 1704164645)])
def test_times_for_at(text, unix):
    assert parse_time(text) == unix


@pytest.mark.parametrize("text", ["", "yesterday", "20241", "2024-13-01", "@x"])
def test_bad_times_for_at(text):
    with pytest.raises(OutputError, match="not a time"):
        parse_time(text)


def test_revisit_after_fetches_pages_again_cheaply(tmp_path):
    with serve(40, 2) as web:
        done = crawl(1, web.seeds(), tmp_path / "long", "--revisit-after", "0.5",
                     "--max-seconds", "4", "--checkpoint-every", "50")
        assert done.returncode == 0, done.stderr
    got = pages(tmp_path / "long")
    with h5py.File(tmp_path / "long" / "crawl.h5") as f:
        urls = f["pages/url"].asstr()[:].tolist()
        revisit = f["pages/revisit"][:].tolist()
    ok = [u for u, (s, _, _) in got.items() if s == 200]
    assert len(urls) > 2 * len(set(urls)), "pages were not revisited"
    assert revisit.count(NOT_MODIFIED) + revisit.count(FRESH) > len(ok)
    assert all(len(history_times(tmp_path / "long", u)) >= 2 for u in ok[:10])
