"""WARC files (bspcrawl.index.warc): records of fake fetches pass ``warcio check`` and
``warcio index`` (the CLI), bodies read back byte-identical, revisits point at their
original, files rotate, and a crash leaves only recoverable files."""

import json
import os
import re
import subprocess
import sys
import uuid
import zlib
from io import BytesIO
from pathlib import Path

import pytest
import xxhash
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser
from warcio.utils import Digester
from warcio.warcwriter import WARCWriter

from bspcrawl.index.history import History, Version
from bspcrawl.index.warc import (
    IDENTICAL,
    NOT_MODIFIED,
    OPEN,
    Archived,
    WarcWriter,
    http_request_headers,
    http_response_headers,
    read_body,
    record_ends,
    recover,
    warc_date,
)
from bspcrawl.messages import FetchJob, FetchResult

WARCIO = Path(sys.executable).with_name("warcio")
T0 = 1_704_067_200.25  # 2024-01-01T00:00:00.25Z
HTML = b"<!doctype html><title>caf\xc3\xa9</title>" + b"<p>words " * 400


def fetch(url: str, status: int = 200, body: bytes = b"", t: float = T0, error: str = "",
          **headers: str) -> FetchResult:
    job = FetchJob(seq=1, index=0, url=url, host="127.1.0.1:8765")
    return FetchResult(job, status=status, error=error, body=body, started=t,
                       headers={k.replace("_", "-"): h for k, h in headers.items()})


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(WARCIO), *args], capture_output=True, text=True, timeout=60)


def check_files(folder: Path) -> list[Path]:
    files = sorted(folder.glob("*.warc.gz"))
    assert files and not list(folder.glob(f"*{OPEN}"))
    done = cli("check", "-v", *map(str, files))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "None" not in done.stdout  # no headerless (torn) record
    return files


def index(path: Path) -> list[dict]:
    done = cli("index", "-f", "warc-type,offset,length,warc-target-uri", str(path))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def archive(w: WarcWriter, h: History, fp: int, res: FetchResult, **kw) -> Archived | None:
    """Write ``res`` as the crawl would, keeping its version in ``h``."""
    content = xxhash.xxh3_64_intdigest(res.body) if res.body else 0
    done = w.write_fetch(res, original=h.original(fp), **kw)
    if done is not None:
        b = done.body
        content = h.original(fp).content_fp if res.status == 304 and done.revisit else content
        h.append(Version(fp, res.started, res.status, content, b.file, b.offset, b.length))
    return done


def test_records_pass_warcio_check_and_index_and_bodies_read_back(tmp_path):
    u = "http://127.1.0.1:8765/"
    binary = bytes(range(256)) * 1200
    cases = [
        (1, fetch(u + "a.html", body=HTML, content_type="text/html; charset=utf-8",
                  etag='"5e1f-4a3b"', content_length=str(len(HTML)))),
        (2, fetch(u + "b.bin", body=binary, content_type="application/octet-stream",
                  content_encoding="gzip", content_length="1234", transfer_encoding="chunked")),
        (3, fetch(u + "missing", 404, b"not found", x_note="caf\xe9")),  # Latin-1 header
        (4, fetch(u + "moved", 301, b"", location=u + "a.html")),
        (5, fetch(u + "odd", 599, b"?")),  # a status without a reason phrase
        (6, fetch(u + "empty", 200, b"")),
        (7, fetch(u + "timeout", 0, error="timeout")),  # no response: not archived
        (1, fetch(u + "a.html", 304, t=T0 + 86400, etag='"5e1f-4a3b"')),  # not modified
        (1, fetch(u + "a.html", 200, HTML, t=T0 + 2 * 86400)),  # same body again
        (1, fetch(u + "a.html", 200, HTML + b"!", t=T0 + 3 * 86400)),  # changed
        (6, fetch(u + "empty", 200, b"", t=T0 + 86400)),  # an empty body is not a revisit
    ]
    h = History()
    out = []
    with WarcWriter(tmp_path, rank=3) as w:
        for fp, res in cases:
            out.append(archive(w, h, fp, res, request_headers=["User-Agent: test"]))
    (path,) = check_files(tmp_path)
    assert path.name == "rank-0003-00000.warc.gz"
    assert out[6] is None
    kinds = [(a.revisit, a.record == a.body) for a in out if a is not None]
    assert kinds == [(False, True)] * 6 + [(True, False)] * 2 + [(False, True)] * 2
    listed = {(int(r["offset"]), int(r["length"])): r for r in index(path)}
    assert [r["warc-type"] for r in listed.values()].count("warcinfo") == 1
    for (_, res), a in zip(cases, out, strict=True):
        if a is None:
            continue
        rec = listed[(a.record.offset, a.record.length)]
        assert rec["warc-type"] == ("revisit" if a.revisit else "response")
        assert rec["warc-target-uri"] == res.job.url
        assert listed[(a.request.offset, a.request.length)]["warc-type"] == "request"
        assert read_body(path, a.body.offset) == (HTML if a.revisit else res.body)
        if a.revisit:
            with pytest.raises(ValueError, match="revisit record has no body"):
                read_body(path, a.record.offset)
    assert len(listed) == 1 + 2 * 10
    ids = [r.rec_headers.get_header("WARC-Record-ID") for r in
           ArchiveIterator(path.open("rb"))]
    assert len(set(ids)) == len(ids) == 21
    for record_id in ids:  # each a version 4 UUID of RFC 4122's variant, as uuid4() gives
        assert re.fullmatch(r"<urn:uuid:[0-9a-f-]{36}>", record_id)
        parsed = uuid.UUID(record_id[10:-1])
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert str(parsed) == record_id[10:-1]


def test_headers_stay_consistent_with_the_decoded_body(tmp_path):
    body = b"x" * 5000
    res = fetch("http://h/z", body=body, content_encoding="br", content_length="99",
                transfer_encoding="chunked", content_type="text/plain")
    with WarcWriter(tmp_path) as w:
        a = w.write_fetch(res)
    with open(w.path(0), "rb") as fh:
        fh.seek(a.record.offset)
        record = next(iter(ArchiveIterator(fh)))
        http = record.http_headers
        assert http.get_header("Content-Encoding") is None
        assert http.get_header("Transfer-Encoding") is None
        assert http.get_header("Content-Length") == "5000"
        assert http.get_header("X-Archive-Orig-Content-Encoding") == "br"
        assert http.get_header("X-Archive-Orig-Content-Length") == "99"
        assert record.content_stream().read() == body  # replay tools decode nothing
        assert record.rec_headers.get_header("WARC-Date") == "2024-01-01T00:00:00.250000Z"
    assert http_response_headers(304, {}, 0) == b"HTTP/1.1 304 Not Modified\r\n\r\n"


def test_header_bytes_above_ascii_anywhere_are_archived(tmp_path):
    # regression (issue 14, found by the hostile-web fuzzer): a header name with bytes
    # >= 0x80, or a value with ";" whose non-ASCII part is not a "=value", made warcio's
    # to_ascii_bytes raise UnicodeEncodeError in write_fetch: the commit, and the crawl, died
    odd = {"x-\xff\xfe": "\xe9\xe8\x80", "content-type": "text/html\xff; charset=utf-8",
           "set-cookie": "c0=v; Path=/; \xff", "x-plain": "caf\xe9"}
    res = fetch("http://h/odd", body=b"<p>hi</p>")
    res.headers = odd
    with WarcWriter(tmp_path) as w:
        a = w.write_fetch(res)
    path = check_files(tmp_path)[0]
    with open(path, "rb") as fh:
        fh.seek(a.record.offset)
        record = next(iter(ArchiveIterator(fh)))
        http = record.http_headers
        assert http.get_header("x-%FF%FE") == "%E9%E8%80"
        assert http.get_header("content-type") == "text/html%FF; charset=utf-8"
        assert http.get_header("set-cookie") == "c0=v; Path=/; %FF"
        assert http.get_header("x-plain") == "caf%E9"
        assert record.content_stream().read() == b"<p>hi</p>"
    # what warcio encodes itself (a value without ";") stays warcio's encoding
    assert http_response_headers(200, {"x-plain": "caf\xe9"}, 0) == (
        b"HTTP/1.1 200 OK\r\nx-plain: caf%C3%A9\r\nContent-Length: 0\r\n\r\n")


def test_revisit_headers_name_the_original(tmp_path):
    h = History()
    url = "http://h/page"
    with WarcWriter(tmp_path) as w:
        archive(w, h, 9, fetch(url, body=b"v1"))
        a304 = archive(w, h, 9, fetch(url, 304, t=T0 + 10))
        same = archive(w, h, 9, fetch(url, body=b"v1", t=T0 + 20))
    path = check_files(tmp_path)[0]
    for a, profile, target in ((a304, NOT_MODIFIED, url), (same, IDENTICAL, url)):
        with open(path, "rb") as fh:
            fh.seek(a.record.offset)
            rec = next(iter(ArchiveIterator(fh))).rec_headers
        assert rec.get_header("WARC-Profile") == profile
        assert rec.get_header("WARC-Refers-To-Target-URI") == target
        assert rec.get_header("WARC-Refers-To-Date") == warc_date(T0)
    assert [x.status for x in h.versions(9)] == [200, 304, 200]
    assert {(x.warc_offset, x.content_fp) for x in h.versions(9)} == {
        (a304.body.offset, xxhash.xxh3_64_intdigest(b"v1"))}


def parsed_head(head: bytes) -> StatusAndHeaders:
    """An HTTP head as warcio parses it (it writes it again as it was, or the test fails)."""
    return StatusAndHeadersParser(["HTTP/1.1", "GET"], verify=False).parse(BytesIO(head))


def warcio_records(res: FetchResult, lines: list[str], original: Version | None) -> bytes:
    """The response (or revisit) and request records warcio's own WARCWriter builds for a
    fetch: the oracle of the records WarcWriter writes by hand."""
    out = BytesIO()
    writer = WARCWriter(out, gzip=False, warc_version="1.1")
    url, body, date = res.job.url, res.body, warc_date(res.started)
    http = parsed_head(http_response_headers(res.status, res.headers, len(body)))
    ids = {"WARC-Date": date, "WARC-Record-ID": "<urn:uuid:main>"}
    if original is not None:
        ids.update({"WARC-Profile": NOT_MODIFIED if res.status == 304 else IDENTICAL,
                    "WARC-Refers-To-Target-URI": url,
                    "WARC-Refers-To-Date": warc_date(original.time)})
        if res.status != 304:
            digest = Digester("sha1")
            digest.update(body)
            ids["WARC-Payload-Digest"] = str(digest)
        main = writer.create_warc_record(url, "revisit", http_headers=http,
                                         warc_headers_dict=ids)
    else:
        main = writer.create_warc_record(url, "response", payload=BytesIO(body),
                                         length=len(body), http_headers=http,
                                         warc_headers_dict=ids)
    writer.write_record(main)
    writer.write_record(writer.create_warc_record(
        url, "request", http_headers=parsed_head(http_request_headers(url, lines)),
        warc_headers_dict={"WARC-Date": date, "WARC-Record-ID": "<urn:uuid:request>",
                           "WARC-Concurrent-To": "<urn:uuid:main>"}))
    return out.getvalue()


def test_records_are_what_warcio_writes(tmp_path):
    """Record by record, the bytes WarcWriter writes (record ids aside) are warcio's."""
    url = "http://127.1.0.1:8765/p?q=1"
    h = History()
    cases = [fetch(url, body=HTML, content_type="text/html", etag='"e"', x_odd="caf\xe9",
                   content_encoding="gzip", content_length="12"),
             fetch(url, 304, t=T0 + 1, etag='"e"'),  # not modified: a revisit
             fetch(url, body=HTML, t=T0 + 2),  # identical payload: a revisit
             fetch(url + "&x", 404, b"", t=T0 + 3),
             fetch(url + "&y", 599, bytes(range(256)), t=T0 + 4)]
    lines = ["If-None-Match: \"e\"", "If-Modified-Since: Mon, 01 Jan 2024 00:00:00 GMT"]
    with WarcWriter(tmp_path) as w:
        for i, res in enumerate(cases):
            fp = 1 if i < 3 else i + 1
            original = h.original(fp)
            a = archive(w, h, fp, res, request_headers=lines)
            with open(next(tmp_path.glob(f"*{OPEN}")), "rb") as fh:
                ours = b""
                for at in (a.record, a.request):
                    fh.seek(at.offset)
                    ours += zlib.decompress(fh.read(at.length), 31)
            main, request = re.findall(rb"<urn:uuid:[-0-9a-f]+>", ours)[:2]
            ours = ours.replace(main, b"<urn:uuid:main>").replace(request, b"<urn:uuid:request>")
            assert ours == warcio_records(res, lines, original if a.revisit else None), i
            assert a.revisit == (i in (1, 2))
    check_files(tmp_path)


def test_files_rotate_at_the_size_limit(tmp_path):
    seen = []
    with WarcWriter(tmp_path, rank=1, max_bytes=20_000) as w:
        for i in range(12):
            body = os.urandom(6000) + bytes([i])  # incompressible: ~6 KB a record
            seen.append((w.write_fetch(fetch(f"http://h/{i}", body=body)), body))
    files = check_files(tmp_path)
    assert [p.name for p in files] == [f"rank-0001-{i:05d}.warc.gz" for i in range(len(files))]
    assert len(files) >= 4
    for a, body in seen:
        assert read_body(w.path(a.record.file), a.record.offset) == body
        assert a.request is not None and a.request.file == a.record.file  # pairs stay together


def test_a_torn_tail_is_cut_and_the_next_writer_starts_a_new_file(tmp_path):
    w = WarcWriter(tmp_path)
    written = [w.write_fetch(fetch(f"http://h/{i}", body=b"%d" % i * 999)) for i in range(5)]
    w.sync()
    open_file = tmp_path / ("rank-0000-00000.warc.gz" + OPEN)
    whole = open_file.stat().st_size
    with open(open_file, "ab") as fh:  # a record torn by a crash, then zeros
        fh.write(zlib.compress(b"WARC/1.1\r\n" + os.urandom(5000), wbits=31)[:900] + b"\0" * 64)
    del w  # the crash: no close
    assert record_ends(open_file)[-1] == whole < open_file.stat().st_size
    torn = cli("check", "-v", str(open_file))  # warcio is lenient: it lists a record
    assert "WARC-Record-ID None None" in torn.stdout  # with no header (other tools fail)
    w2 = WarcWriter(tmp_path)
    assert w2.index == 1
    check_files(tmp_path)
    path = tmp_path / "rank-0000-00000.warc.gz"
    assert path.stat().st_size == whole
    for i, a in enumerate(written):
        assert read_body(path, a.record.offset) == b"%d" % i * 999


def test_recover_to_a_checkpoint(tmp_path):
    with WarcWriter(tmp_path) as w:
        a = [w.write_fetch(fetch(f"http://h/{i}", body=b"b" * 100)) for i in range(3)]
    path = w.path(0)
    ends = record_ends(path)
    assert ends[-1] == path.stat().st_size and len(ends) == 1 + 2 * 3
    stale = path.with_name(path.name + OPEN)
    path.rename(stale)
    with pytest.raises(ValueError, match="not the end of a complete record"):
        recover(stale, keep=a[1].record.offset + 1)
    keep = a[1].request.offset + a[1].request.length
    assert recover(stale, keep=keep) == path and path.stat().st_size == keep
    check_files(tmp_path)
    with pytest.raises(ValueError, match="not an unfinished"):
        recover(path)
    empty = tmp_path / ("rank-0000-00009.warc.gz" + OPEN)
    empty.write_bytes(b"\x1f\x8b\x08")
    assert recover(empty) is None and not empty.exists()


CHILD = """
import json, os, signal, sys
from pathlib import Path
from bspcrawl.index.warc import WarcWriter
from bspcrawl.messages import FetchJob, FetchResult
w = WarcWriter(Path(sys.argv[1]), rank=2)
for i in range(30):
    res = FetchResult(FetchJob(1, i, f"http://h/{i}", "h"), status=200,
                      body=os.urandom(3000) if i % 2 else b"page %d " % i * 500, started=1e9 + i)
    a = w.write_fetch(res)
    print(json.dumps([a.record.offset, res.body.hex()]), flush=True)
os.write(w._fd, b"\\x1f\\x8b\\x08\\x00half a record")  # torn by the kill
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_records_reported_before_a_kill_survive(tmp_path):
    done = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == -9, done.stderr
    reported = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(reported) == 30
    WarcWriter(tmp_path, rank=2).close()  # recovers, writes nothing
    (path,) = check_files(tmp_path)
    for offset, body in reported:
        assert read_body(path, offset) == bytes.fromhex(body)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError):
        WarcWriter(tmp_path, max_bytes=0)
    with pytest.raises(ValueError):
        WarcWriter(tmp_path, level=4)
    with WarcWriter(tmp_path) as w:
        a = w.write_fetch(fetch("http://h/", body=b"x"))
    path = w.path(0)
    for offset in range(path.stat().st_size + 1):  # only a record's offset has a body
        if offset == a.record.offset:
            assert read_body(path, offset) == b"x"
            continue
        with pytest.raises(ValueError, match="no WARC record|record has no body"):
            read_body(path, offset)
    assert not list(tmp_path.glob(f"*{OPEN}"))


def test_a_truncated_body_is_archived_with_warc_truncated(tmp_path):
    # issue 14: a page over --fetch-max-bytes is kept cut, and its record says so
    cut = fetch("http://h/big", body=b"<p>" + b"x" * 5000, content_length="999999")
    cut.truncated = True
    with WarcWriter(tmp_path) as w:
        a = w.write_fetch(cut)
        w.write_fetch(fetch("http://h/small", body=b"whole"))
    (path,) = check_files(tmp_path)
    with open(path, "rb") as f:
        records = [(r.rec_headers.get_header("WARC-Target-URI"),
                    r.rec_headers.get_header("WARC-Truncated"), r.content_stream().read())
                   for r in ArchiveIterator(f) if r.rec_type == "response"]
    assert records == [("http://h/big", "length", cut.body), ("http://h/small", None, b"whole")]
    assert read_body(path, a.record.offset) == cut.body


FULL_DISK = """
import os, resource, signal, sys
from pathlib import Path
from bspcrawl.index.warc import WarcWriter
from bspcrawl.messages import FetchJob, FetchResult
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the limit, write() fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (30_000, 30_000))
w = WarcWriter(Path(sys.argv[1]), rank=1)
written = 0
for i in range(20):
    res = FetchResult(FetchJob(1, i, f"http://h/{i}", "h"), status=200, body=os.urandom(3000))
    try:
        w.write_fetch(res)
        written += 1
    except OSError as e:
        print(written, e.errno, flush=True)
        break
w.close()
"""


def test_a_full_disk_leaves_no_torn_record_in_a_finished_file(tmp_path):
    # issue 14: a failed WARC write left a torn record in a file then renamed as finished
    done = subprocess.run([sys.executable, "-c", FULL_DISK, str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    written, errno = map(int, done.stdout.split())
    assert 0 < written < 20 and errno == 27  # EFBIG
    (path,) = check_files(tmp_path)
    with open(path, "rb") as f:
        uris = [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(f)
                if r.rec_type == "response"]
    assert uris == [f"http://h/{i}" for i in range(written)]
