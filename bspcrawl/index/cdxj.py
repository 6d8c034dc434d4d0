"""CDXJ indexes of the WARC files: pywb's index format, written as the crawl goes.

A line is ``SURT-KEY TIMESTAMP14 {json}``, sorted as text, with the fields and string
values ``cdxj-indexer`` writes (url, mime, status, digest, length, offset, filename) for
response and revisit records. :class:`CdxjWriter` writes each finished WARC file's
sorted part to ``DIR/indexes/``; :func:`merge` (rank 0, at the end) merges the parts into
``index.cdxj``, indexing a WARC file without a part (one finished on resume) from its
records.
"""

from __future__ import annotations

import heapq
import json
import os
import re
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote_from_bytes, unquote_to_bytes

from warcio.archiveiterator import ArchiveIterator
from warcio.timeutils import iso_date_to_timestamp

INDEXES_DIR = "indexes"
MERGED = "index.cdxj"
REVISIT_MIME = "warc/revisit"
_MIME_END = re.compile(r"[;\s]")


def url_key(url: str) -> str:
    """``surt.surt``'s key of ``url`` (``http://www.Example.com/a`` -> ``com,example)/a``),
    computed here for plain http(s) URLs, since surt calls the resolver for an IP address;
    anything else goes to surt itself (the interop tests check that the two agree)."""
    scheme, sep, rest = url.partition("://")
    slash = rest.find("/")
    if sep and scheme in _DEFAULT_PORT and slash > 0 and _PLAIN.fullmatch(rest, slash):
        path, _, query = rest[slash:].partition("?")
        if "%" in path or "%" in query:
            path, query = _escapes(path), _escapes(query)
        path, query = path.lower(), query.lower()
        key = _host_key(rest[:slash], _DEFAULT_PORT[scheme])
        if (key and "/." not in path and "//" not in path and not _SESSION.search(path)
                and not _SESSION.search(query)):
            if len(path) > 1 and path.endswith("/"):
                path = path[:-1]
            if query:
                path += "?" + "&".join(
                    sorted(query.split("&"), key=lambda arg: tuple(arg.split("=", 1))))
            return key + path
    return _surt(url)


_DEFAULT_PORT = {"http": "80", "https": "443"}
_PLAIN = re.compile(r"[A-Za-z0-9\-._~/!$'()*+,;=:@&?%]*")
_SURT_SAFE = b"""!"$&'()*+,-./:;<=>?@[\\]^_`{|}~"""  # what surt's escapeOnce leaves as it is


def _escapes(part: str) -> str:
    """surt's ``escapeOnce(unescapeRepeatedly(part))`` of a path or query."""
    data = part.encode()
    while (decoded := unquote_to_bytes(data)) != data:
        data = decoded
    return quote_from_bytes(data, safe=_SURT_SAFE)
_SESSION = re.compile(r"sessionid|sid=|cfid=|\.aspx")  # surt's session-id patterns
_NAME = re.compile(r"(?:www\d*\.)?([a-z0-9-]+(?:\.[a-z0-9-]+)*)(?::([0-9]{1,5}))?")
_QUAD = re.compile(r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}"
                   r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])")


def _host_key(authority: str, default_port: str) -> str:
    """surt's key of ``authority`` up to its ``)``; '' for one left to surt (upper case,
    IDNA, IPv6, userinfo, a number surt reads as IPv4)."""
    found = _NAME.fullmatch(authority)
    if found is None:
        return ""
    host, port = found[1], found[2]
    if (host[0].isdigit() and (host.replace(".", "").isdigit() or host.startswith("0"))
            and not _QUAD.fullmatch(host)):  # a number surt resolves: its own business
        return ""
    key = ",".join(reversed(host.split(".")))
    if port and int(port) > 65535:
        return ""
    if port and int(port) and str(int(port)) != default_port:
        key += f":{int(port)}"
    return key + ")"


def _surt(url: str) -> str:
    import surt  # slow to import (tldextract and requests come with it); rarely needed

    try:
        return surt.surt(url)
    except (ValueError, TypeError, AttributeError):  # not a URL surt can read: as is
        return url


def timestamp14(t: float) -> str:
    """``YYYYMMDDhhmmss`` (UTC) of Unix time ``t``."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y%m%d%H%M%S")


def bare_mime(content_type: str) -> str:
    """A Content-Type without its parameters (``text/html; charset=x`` -> ``text/html``)."""
    return _MIME_END.split(content_type.strip(), maxsplit=1)[0].strip()


def line(url: str, timestamp: str, fields: dict[str, str]) -> str:
    return f"{url_key(url)} {timestamp} {json.dumps(fields)}"


def part_name(warc_file: str) -> str:
    return warc_file.removesuffix(".warc.gz") + ".cdxj"


def _fields(url: str, mime: str, status: str, digest: str, length: int, offset: int,
            filename: str) -> dict[str, str]:
    fields = {"url": url, "mime": mime, "status": status, "digest": digest,
              "length": str(length), "offset": str(offset), "filename": filename}
    return {k: v for k, v in fields.items() if v}


def _write_lines(path: Path, lines: list[str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
    os.replace(tmp, path)


class CdxjWriter:
    """Collects the CDXJ lines of the WARC file being written; writes them, sorted, to
    ``folder/<part_name>`` when the next file begins or on :meth:`flush`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._file = ""  # the WARC file whose lines are collected
        self._lines: list[str] = []

    def add(self, warc_file: str, url: str, t: float, *, status: int, mime: str,
            digest: str, offset: int, length: int) -> None:
        """One record of ``warc_file``; an empty ``mime`` or ``digest`` is left out."""
        if warc_file != self._file:
            self.flush()
            self._file = warc_file
        self._lines.append(line(url, timestamp14(t), _fields(
            url, mime, str(status), digest, length, offset, warc_file)))

    def flush(self) -> None:
        """Write the lines of the current (finished) WARC file."""
        if self._lines:
            self.folder.mkdir(parents=True, exist_ok=True)
            _write_lines(self.folder / part_name(self._file), sorted(self._lines))
        self._lines = []


def index_warc(path: Path) -> list[str]:
    """The sorted CDXJ lines of a WARC file, read from it (response and revisit records)."""
    lines = []
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        for record in it:
            if record.rec_type not in ("response", "revisit"):
                continue
            head = record.rec_headers
            http = record.http_headers
            if record.rec_type == "revisit":
                mime = REVISIT_MIME
            else:
                mime = bare_mime(http.get_header("Content-Type", "")) if http else ""
            it.read_to_end(record)
            url = head.get_header("WARC-Target-URI")
            lines.append(line(url, iso_date_to_timestamp(head.get_header("WARC-Date")), _fields(
                url, mime, http.get_statuscode() if http else "-",
                head.get_header("WARC-Payload-Digest") or "", it.get_record_length(),
                it.get_record_offset(), path.name)))
    return sorted(lines)


def merge(out: Path, warc_dir: str = "warc") -> Path:
    """Merge every WARC file's index part into ``out/indexes/index.cdxj`` (a file without
    a part is indexed from its records first); returns its path."""
    folder = out / INDEXES_DIR
    folder.mkdir(exist_ok=True)
    parts = []
    for warc in sorted((out / warc_dir).glob("*.warc.gz")):
        part = folder / part_name(warc.name)
        if not part.exists():
            _write_lines(part, index_warc(warc))
        parts.append(part)
    merged = folder / MERGED
    tmp = merged.with_name(merged.name + ".tmp")
    with ExitStack() as stack, open(tmp, "w", encoding="utf-8") as fh:
        readers = [stack.enter_context(open(p, encoding="utf-8")) for p in parts]
        fh.writelines(heapq.merge(*readers))
    os.replace(tmp, merged)
    return merged
