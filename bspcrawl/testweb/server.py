"""An asyncio HTTP/1.1 server for a :class:`~bspcrawl.testweb.model.Web` on loopback.

One event loop, one listening socket per host address (``127.1.a.b:PORT``); a request's
site is the address its connection arrived on (``Host`` as the fallback). Keep-alive, GET
and HEAD, a bounded request head. Pages carry ``ETag``/``Last-Modified`` (and sometimes
``Expires``) and answer 304 to matching validators; redirects, soft 404s and traps come from
the model, and the adversarial hosts (:mod:`.adversarial`) misbehave here: ``dead`` has no
socket, ``reset``/``throttle``/``flaky`` misbehave on every request but /robots.txt, and
every host delays and rate-limits as the web says.

``latency=(lo, hi)`` adds a uniform random delay to each answer; ``log=PATH`` appends
``netloc<TAB>target<TAB>start<TAB>end<TAB>status`` per request (``time.monotonic()``,
shared by the machine's processes; status 0 is a reset).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from typing import Protocol, TextIO, TypeVar

from bspcrawl.testweb import adversarial as adv
from bspcrawl.testweb.adversarial import Reply, Stream
from bspcrawl.testweb.config import PAGE, REDIRECT, SPECIAL, TRAPS
from bspcrawl.testweb.model import Web, host_address, host_index
from bspcrawl.testweb.options import config_argv

MAX_HEADER = 16 * 1024  # bytes of request head (request line + headers) accepted
REQUEST_TIMEOUT = 30.0  # seconds a connection may stay idle or take to send a request head

_REASONS = {
    200: "OK", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified",
    307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request", 404: "Not Found",
    405: "Method Not Allowed", 429: "Too Many Requests", 431: "Request Header Fields Too Large",
    500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
    504: "Gateway Timeout", 505: "HTTP Version Not Supported",
}
_TICK = 0.05  # s between two pieces of a bandwidth-limited body
_HTML = "text/html; charset=utf-8"
_TEXT = "text/plain; charset=utf-8"


class PortInUseError(OSError):
    """A host address of the web cannot be bound."""


@functools.cache
def _small_page(status: int) -> bytes:
    reason = _REASONS[status]
    return (
        f"<!DOCTYPE html>\n<html><head><title>{status} {reason}</title></head>"
        f"<body><h1>{reason}</h1></body></html>\n"
    ).encode()


@functools.lru_cache(maxsize=4096)
def http_date(t: int) -> str:
    """An HTTP date (RFC 9110 IMF-fixdate) of Unix time ``t``."""
    return formatdate(t, usegmt=True)


def _etag_matches(header: str, etag: str) -> bool:
    """Whether an If-None-Match value matches ``etag`` (weak comparison, ``*`` too)."""
    tags = (t.strip().removeprefix("W/") for t in header.split(","))
    return header.strip() == "*" or etag in tags


def _parse_date(text: str) -> float | None:
    try:
        return parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


class Listener:
    """What the local webs' servers share: a socket per host address, a task per connection
    and a request log. A subclass answers in :meth:`_connection` and calls :meth:`listen`."""

    def __init__(self, log: str | Path | None, limit: int) -> None:
        self.log_path = Path(log) if log is not None else None
        self.limit = limit  # bytes of a request head
        self.requests = 0
        self.addresses: list[tuple[str, int]] = []
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task] = set()
        self._log: TextIO | None = None

    async def listen(self, addresses: list[str], port: int) -> None:
        """Open the log and bind every address, or raise :class:`PortInUseError`."""
        if self.log_path is not None:
            self._log = open(self.log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
        try:
            for addr in addresses:
                try:
                    server = await asyncio.start_server(self._serve, addr, port,
                                                        limit=self.limit, backlog=1024,
                                                        reuse_address=True)
                except OSError as e:
                    what = "in use" if e.errno == errno.EADDRINUSE else "not available"
                    raise PortInUseError(e.errno, f"cannot listen on {addr}:{port}: "
                                                  f"address {what} ({e.strerror})") from e
                self._servers.append(server)
                self.addresses.append((addr, port))
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Close the listeners, every open connection and the log."""
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()
        if self._log is not None:
            self._log.close()
            self._log = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._connection(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError,
                asyncio.CancelledError, OSError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    def _logged(self, netloc: str, target: str, start: float, what: object) -> None:
        """Count a finished request and log it (tabs and line ends in the target escaped)."""
        self.requests += 1
        if self._log is not None:
            target = target.replace("\t", "%09").replace("\n", "%0A").replace("\r", "%0D")
            self._log.write(f"{netloc}\t{target}\t{start:.6f}\t{time.monotonic():.6f}\t{what}\n")


class TestWebServer(Listener):
    """Serves one :class:`Web`; :meth:`start` and :meth:`stop` run inside an event loop."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, web: Web, latency: tuple[float, float] | None = None,
                 log: str | Path | None = None, latency_seed: int | None = None,
                 request_timeout: float = REQUEST_TIMEOUT, max_header: int = MAX_HEADER) -> None:
        if latency is not None and not 0 <= latency[0] <= latency[1]:
            raise ValueError(f"latency must be (lo, hi) with 0 <= lo <= hi, not {latency}")
        super().__init__(log, max_header)
        self.web = web
        self.latency = latency
        self.request_timeout = request_timeout
        self.max_header = max_header
        self._random = random.Random(latency_seed)
        self._site = {host_address(h): h for h in range(web.n_hosts)}
        self._roles = web.role
        self._odd = [bool(web.soft404[h]) or web.role[h] in TRAPS for h in range(web.n_hosts)]
        self._delayed = bool(web.host_delay.any())
        self._rate = web.host_rate if web.host_rate.any() else None
        self._served_at: dict[int, float] = {}  # throttle hosts: when the last page was served
        self._count: dict[int, int] = {}  # flaky hosts: page requests so far

    async def start(self) -> None:
        self.web.html(0)  # builds the text all pages share before the first request
        await self.listen([host_address(h) for h in range(self.web.n_hosts)
                           if self._roles[h] != "dead"],  # dead: connection refused
                          self.web.config.port)

    def describe(self) -> str:
        """One line saying where the web listens."""
        web = self.web
        more = web.n_hosts - web.config.hosts
        return (f"testweb: {web.n_pages} pages on {web.config.hosts} hosts"
                + (f" and {more} adversarial ones" if more else "")
                + f", http://{host_address(0)} .. http://{host_address(web.n_hosts - 1)} port "
                f"{web.config.port} (seed {web.config.seed}, epoch {web.config.epoch})")

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        site = self._site.get(writer.get_extra_info("sockname")[0])
        while await self._one_request(reader, writer, site):
            pass

    async def _one_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                           site: int | None) -> bool:
        """Read, answer and log one request; False when the connection should close."""
        try:
            async with asyncio.timeout(self.request_timeout):
                head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, TimeoutError):
            return False
        except asyncio.LimitOverrunError:
            await self._send(writer, *self._error(431), None, "-", time.monotonic(), True)
            return False
        start = time.monotonic()
        lines = head[:-4].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            status = 505 if len(parts) == 3 and parts[2].startswith("HTTP/") else 400
            await self._send(writer, *self._error(status), site, lines[0][:200], start, True)
            return False
        method, target, version = parts
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                await self._send(writer, *self._error(400), site, target, start, True)
                return False
            headers[name.strip().lower()] = value.strip()
        length = headers.get("content-length", "0")
        if not length.isdigit() or int(length) > self.max_header:
            await self._send(writer, *self._error(400), site, target, start, True)
            return False
        if int(length):
            async with asyncio.timeout(self.request_timeout):
                await reader.readexactly(int(length))  # a body we ignore
        connection = headers.get("connection", "").lower()
        close = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
        if target.startswith(("http://", "https://")):  # absolute-form
            rest = target.split("://", 1)[1]
            slash = rest.find("/")
            headers["host"], target = (rest, "/") if slash < 0 else (rest[:slash], rest[slash:])
        if site is None:
            site = host_index(headers.get("host", "").rsplit(":", 1)[0])
            if site is not None and site >= self.web.n_hosts:
                site = None
        role = self._roles[site] if site is not None else ""
        answer = None
        if role and target != "/robots.txt" and method in ("GET", "HEAD"):
            if role == "reset":
                await self._reset(writer, site, target, start)
                return False
            answer = self._misbehave(role, site)
        status, extra, body = answer or self._answer(site, method, target, headers)
        delay = self.web.response_delay(site, target) if self._delayed and site is not None else 0
        if self.latency is not None:
            delay += self._random.uniform(*self.latency)
        if delay:
            await asyncio.sleep(delay)
        await self._send(writer, status, extra, body, site, target, start, close,
                         head_only=method == "HEAD")
        return not close

    def _misbehave(self, role: str, site: int) -> Reply | None:
        """The 429 or 5xx of a throttle or flaky host, or None to answer normally."""
        if role == "throttle":
            now = time.monotonic()
            if now - self._served_at.get(site, -1e9) < adv.THROTTLE_INTERVAL:
                status, extra, body = self._error(429)
                return status, [*extra, f"Retry-After: {adv.RETRY_AFTER}"], body
            self._served_at[site] = now
        elif role == "flaky":
            n = self._count[site] = self._count.get(site, -1) + 1
            phase = n % adv.FLAKY_PERIOD - 1
            if 0 <= phase < adv.FLAKY_BURST:
                status, extra, body = self._error(adv.FLAKY_STATUSES[phase])
                if status == 503:
                    extra = [*extra, f"Retry-After: {adv.RETRY_AFTER}"]
                return status, extra, body
        return None

    async def _reset(self, writer: asyncio.StreamWriter, site: int, target: str,
                     start: float) -> None:
        """Reset the connection (RST), for half the targets after part of the answer."""
        if zlib.crc32(target.encode()) & 1:
            status, extra, body = self._answer(site, "GET", target, {})
            assert isinstance(body, bytes)
            head = [f"HTTP/1.1 {status} {_REASONS[status]}", *extra, f"Content-Length: {len(body)}"]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body[: len(body) // 3])
            with contextlib.suppress(ConnectionError):
                await writer.drain()
        reset(writer)
        self._logged(self.web.netlocs[site], target, start, 0)

    def _answer(self, site: int | None, method: str, target: str, headers: dict[str, str]) -> Reply:
        web = self.web
        if method not in ("GET", "HEAD"):
            status, extra, body = self._error(405)
            return status, [*extra, "Allow: GET, HEAD"], body
        if site is None:
            return self._error(404)
        if target == "/robots.txt":
            text = web.robots_txt(site)
            if text is None:
                return self._error(404)
            return 200, [f"Content-Type: {_TEXT}"], text.encode()
        r = web.lookup(site, target)
        kind = web.kind[r] if r >= 0 else -1
        if kind == PAGE:
            return self._page(r, headers)
        if kind == REDIRECT:
            status, location = web.redirect(r)
            return status, [f"Location: {location}", f"Content-Type: {_HTML}"], _small_page(status)
        if kind == SPECIAL:
            copy = int(web.copy_of[r])
            return self._page(copy, headers, web.copy_html(r)) if copy >= 0 else web.reply(r)
        if self._odd[site]:  # a soft 404 or a spider trap
            answer = web.reply_unknown(site, target)
            if answer is not None:
                return answer
        return self._error(404)

    def _page(self, r: int, headers: dict[str, str], body: bytes | None = None) -> Reply:
        """Page ``r`` (or ``body``) with its validators, or 304 when the request's match."""
        web = self.web
        etag, modified = web.etag(r), web.last_modified(r)
        extra = [f"ETag: {etag}", f"Last-Modified: {http_date(modified)}"]
        if web.expiring[r]:
            extra.append(f"Expires: {http_date((int(time.time()) // 86400 + 366) * 86400)}")
        match = headers.get("if-none-match")
        if match is not None:
            if _etag_matches(match, etag):
                return 304, extra, b""
        elif "if-modified-since" in headers:
            since = _parse_date(headers["if-modified-since"])
            if since is not None and modified <= since:
                return 304, extra, b""
        return 200, [f"Content-Type: {_HTML}", *extra], web.html(r) if body is None else body

    @staticmethod
    def _error(status: int) -> Reply:
        return status, [f"Content-Type: {_HTML}"], _small_page(status)

    async def _send(self, writer: asyncio.StreamWriter, status: int, extra: list[str],
                    body: bytes | Stream, site: int | None, target: str, start: float,
                    close: bool, head_only: bool = False) -> None:
        date = f"Date: {http_date(int(time.time()))}"
        lines = [f"HTTP/1.1 {status} {_REASONS[status]}", "Server: bspcrawl-testweb", date, *extra]
        if status != 304:
            length = body.length if isinstance(body, Stream) else len(body)
            lines.append(f"Content-Length: {length}")
        if close:
            lines.append("Connection: close")
        header = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        rate = self._rate[site] if self._rate is not None and site is not None else 0
        try:
            if head_only:  # the headers only (Content-Length tells the size)
                writer.write(header)
            elif isinstance(body, bytes) and not rate:
                writer.write(header + body)  # the fast path: one write, one send()
            else:
                writer.write(header)
                await self._stream(writer, body, float(rate))
            await writer.drain()
        finally:  # logged even if the client went away
            self._logged(self.web.netlocs[site] if site is not None else "-", target, start,
                         status)

    @staticmethod
    async def _stream(writer: asyncio.StreamWriter, body: bytes | Stream, rate: float) -> None:
        """Send ``body`` piece by piece, at ``rate`` bytes a second (0: unlimited)."""
        chunks = body.chunks() if isinstance(body, Stream) else (body,)
        step = max(256, int(rate * _TICK))
        for chunk in chunks:
            if not rate:
                writer.write(chunk)
                await writer.drain()
                continue
            for i in range(0, len(chunk), step):
                writer.write(chunk[i : i + step])
                await writer.drain()
                await asyncio.sleep(min(step, len(chunk) - i) / rate)



def reset(writer: asyncio.StreamWriter) -> None:
    """End a connection with a TCP reset (``SO_LINGER`` 0) instead of a close."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def free_port(hosts: int = 1, tries: int = 50) -> int:
    """A TCP port that is free right now on the first ``hosts`` host addresses (for tests)."""
    for _ in range(tries):
        socks: list[socket.socket] = []
        try:
            first = socket.socket()
            socks.append(first)
            first.bind((host_address(0), 0))
            port = first.getsockname()[1]
            for h in range(1, hosts):
                s = socket.socket()
                socks.append(s)
                s.bind((host_address(h), port))
            return port
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise PortInUseError(errno.EADDRINUSE, f"no port free on {hosts} host addresses")


class Serving(Protocol):
    """A server :func:`in_thread` and :func:`forever` can run."""

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    def describe(self) -> str: ...


S = TypeVar("S", bound=Serving)


@contextlib.contextmanager
def in_thread(server: S, name: str) -> Iterator[S]:
    """Run ``server`` from a background thread (its own loop) inside a ``with``: yields it
    once it listens, stops it on exit."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    failure: list[BaseException] = []

    def main() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(server.start())
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            failure.append(e)
            ready.set()
            loop.close()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(server.stop())
            loop.close()

    thread = threading.Thread(target=main, name=name, daemon=True)
    thread.start()
    ready.wait()
    if failure:
        thread.join()
        raise failure[0]
    try:
        yield server
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()


def forever(make: Callable[[], Serving], announce: Callable[[str], object] = print) -> None:
    """Serve ``make()`` in this thread until SIGINT or SIGTERM; announce it once it listens."""

    async def main() -> None:
        server = make()
        await server.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        announce(server.describe())
        try:
            await stop.wait()
        finally:
            await server.stop()

    asyncio.run(main())


@contextlib.contextmanager
def running(web: Web, latency: tuple[float, float] | None = None,
            log: str | Path | None = None, **options) -> Iterator[TestWebServer]:
    """Serve ``web`` from a background thread inside a ``with`` (see :func:`in_thread`)."""
    with in_thread(TestWebServer(web, latency=latency, log=log, **options),
                   "testweb-server") as server:
        yield server


def serve_forever(web: Web, latency: tuple[float, float] | None = None,
                  log: str | Path | None = None, announce=print) -> None:
    """Serve ``web`` in this thread until SIGINT or SIGTERM, then stop cleanly."""
    forever(lambda: TestWebServer(web, latency=latency, log=log), announce)


@contextlib.contextmanager
def running_process(web: Web, latency: tuple[float, float] | None = None,
                    log: str | Path | None = None,
                    stop_timeout: float = 10.0) -> Iterator[subprocess.Popen]:
    """Like :func:`running`, but in a child process (``python -m bspcrawl.testweb serve``)
    that shares no GIL with the caller."""
    argv = [sys.executable, "-m", "bspcrawl.testweb", "serve", *config_argv(web.config)]
    if latency is not None:
        argv += ["--latency", f"{latency[0]!r},{latency[1]!r}"]
    if log is not None:
        argv += ["--log", str(log)]
    with child_server(argv, stop_timeout) as proc:
        yield proc


@contextlib.contextmanager
def child_server(argv: list[str], stop_timeout: float = 10.0) -> Iterator[subprocess.Popen]:
    """Run the server command ``argv`` for the block, yielded once its first stdout line
    names a ``127.1.`` address (else OSError with its last error line); on exit SIGTERM,
    then a kill after ``stop_timeout`` s. Its stderr goes to a file: a pipe could block it."""
    with (
        tempfile.TemporaryFile("w+") as errors,
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, text=True) as proc,
    ):
        try:
            if "127.1." not in (proc.stdout.readline() if proc.stdout else ""):
                proc.wait()
                errors.seek(0)
                message = errors.read().strip().splitlines()
                raise OSError(message[-1] if message else f"{' '.join(argv[2:4])} exited")
            yield proc
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(stop_timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
