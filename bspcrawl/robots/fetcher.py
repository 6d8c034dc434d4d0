"""The fetch workers of one rank (Marin's "robots"): up to ``fetch_workers`` libcurl
transfers on one ``CurlMulti`` in one thread (as in Dominos; Hafri and Djeraba, "High
performance crawling system"), so network waits overlap while Python stays on one thread.

- **Politeness on the wall clock**: each host's jobs wait in a FIFO, one in transfer, the
  next no earlier than the host's rest after the last ended (``Politeness.rest``, the rule
  the frontier schedules by). Opt-in exception: ``--host-connections N`` lets an unpaced
  host (a server of one's own) have N transfers; robots.txt fetches keep one.
- **Order**: free transfers go to rested hosts by their oldest job's schedule, then the
  longest queue first, so a big site is not left for the crawl's tail.
- Connections go only to addresses the ``AddressPolicy`` permits, checked after DNS.
- The thread shares two queues with the scheduler (:meth:`Fetcher.submit`,
  :meth:`Fetcher.get`) and sleeps in ``poll(2)`` on the transfers' sockets and a wake-up
  socket pair (an idle rank costs no CPU).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import queue
import select
import socket
import threading
import time
from collections import deque

import pycurl

from bspcrawl.messages import FetchJob, FetchResult
from bspcrawl.robots.addresses import AddressPolicy
from bspcrawl.robots.politeness import RETRY_STATUSES, Politeness, retry_after
from bspcrawl.robots.robotstxt import MAX_ROBOTS_BYTES
from bspcrawl.settings import Settings

ROBOTS_TXT_HOPS = 5  # RFC 9309 2.3.1.2: follow at least five redirects for robots.txt
WITHDRAWN = "withdrawn"  # FetchResult.error of a job given back unstarted (Fetcher.withdraw)
WAIT_MAX = 0.05  # s, the longest the fetcher thread sleeps between looks at its state

_ERRORS = {
    pycurl.E_COULDNT_RESOLVE_HOST: "dns",
    pycurl.E_COULDNT_CONNECT: "connect",
    pycurl.E_OPERATION_TIMEDOUT: "timeout",
    pycurl.E_GOT_NOTHING: "empty_reply",
    pycurl.E_RECV_ERROR: "recv",
    pycurl.E_SEND_ERROR: "send",
    pycurl.E_SSL_CONNECT_ERROR: "tls",
    pycurl.E_PEER_FAILED_VERIFICATION: "tls",
    pycurl.E_TOO_MANY_REDIRECTS: "redirects",
    pycurl.E_UNSUPPORTED_PROTOCOL: "protocol",
    pycurl.E_BAD_CONTENT_ENCODING: "encoding",
    pycurl.E_PARTIAL_FILE: "partial",
    pycurl.E_FTP_WEIRD_SERVER_REPLY: "bad_reply",  # CURLE_WEIRD_SERVER_REPLY (old name):
    # a malformed status line or header, two different Content-Lengths, ...
    100: "headers_too_large",  # CURLE_TOO_LARGE (libcurl 8.6): past libcurl's header limits
}


class _Transfer:
    """A reusable curl handle and the buffers of its current job."""

    def __init__(self, settings: Settings, policy: AddressPolicy) -> None:
        self.curl = c = pycurl.Curl()
        self.policy = policy
        self.blocked = ""  # an address the policy refused during the current job
        self.limit = settings.fetch_max_bytes
        self.parts: list[bytes] = []
        self.size = 0
        self.cut = False  # the current body was cut at its cap
        self.lines: list[bytes] = []  # the header lines received (libcurl appends them)
        self.job: FetchJob | None = None
        self.limit_now = self.limit
        self.started = 0.0
        fault = os.environ.get("BSPCRAWL_FAULT", "")  # tests: a worker that hangs on URLs
        self.hang = fault[5:] if fault.startswith("hang:") else ""  # holding this
        http = pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS
        c.setopt(pycurl.PROTOCOLS, http)
        c.setopt(pycurl.REDIR_PROTOCOLS, http)
        c.setopt(pycurl.NOSIGNAL, 1)
        c.setopt(pycurl.PROXY, settings.fetch_proxy)  # '': no proxy, whatever the environment
        c.setopt(pycurl.USERAGENT, settings.fetch_user_agent)
        c.setopt(pycurl.CONNECTTIMEOUT_MS, int(settings.fetch_connect_timeout * 1000))
        c.setopt(pycurl.TIMEOUT_MS, int(settings.fetch_timeout * 1000))
        if settings.fetch_low_speed:
            c.setopt(pycurl.LOW_SPEED_LIMIT, settings.fetch_low_speed)
            c.setopt(pycurl.LOW_SPEED_TIME, max(1, int(settings.fetch_timeout / 3)))
        c.setopt(pycurl.ACCEPT_ENCODING, "")  # every encoding libcurl decodes
        c.setopt(pycurl.BUFFERSIZE, 256 * 1024)
        c.setopt(pycurl.DNS_CACHE_TIMEOUT, 600)
        c.setopt(pycurl.WRITEFUNCTION, self._write)
        c.setopt(pycurl.HEADERFUNCTION, self.lines.append)  # no Python frame a line
        c.setopt(pycurl.OPENSOCKETFUNCTION, self._open_socket)

    def _open_socket(self, purpose: int, address: tuple) -> socket.socket | int:
        """Connect only to addresses the policy permits (checked after DNS)."""
        family, socktype, protocol, addr = address
        if family not in (socket.AF_INET, socket.AF_INET6) or not self.policy.permits(addr[0]):
            self.blocked = str(addr[0]) if family in (socket.AF_INET, socket.AF_INET6) else "?"
            return pycurl.SOCKET_BAD
        return socket.socket(family, socktype, protocol)

    def start(self, job: FetchJob) -> None:
        if self.hang and self.hang in job.url:
            threading.Event().wait()
        self.job, self.parts, self.size, self.cut = job, [], 0, False
        self.lines.clear()
        self.blocked = ""
        self.limit_now = MAX_ROBOTS_BYTES if job.robotstxt else self.limit
        c = self.curl
        c.setopt(pycurl.URL, job.url)
        c.setopt(pycurl.FOLLOWLOCATION, 1 if job.robotstxt else 0)
        c.setopt(pycurl.MAXREDIRS, ROBOTS_TXT_HOPS)
        # header values came from a server as bytes (ETag, Last-Modified): send them back so
        c.setopt(pycurl.HTTPHEADER, [h.encode("latin-1", "replace") for h in job.headers])
        self.started = time.time()

    def _write(self, data: bytes) -> int | None:
        self.size += len(data)
        if self.size > self.limit_now:  # keep the first bytes (decoded), stop the transfer
            self.parts.append(data[: len(data) - (self.size - self.limit_now)])
            self.cut = True
            return 0  # abort: E_WRITE_ERROR
        self.parts.append(data)
        return None

    def _headers(self) -> dict[str, str]:
        """The last response's header fields (lower-case names) from the lines received."""
        headers: dict[str, str] = {}
        for line in self.lines:
            name, sep, value = line.decode("latin-1").partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
            elif name.startswith("HTTP/"):
                headers.clear()  # a new response (after 100-continue or a redirect)
        return headers

    def finish(self, errno: int) -> FetchResult:
        """The current job's result (libcurl's ``errno``: 0 or the failure). Never raises:
        a reply this cannot take is the job's ``bad_reply``, not the thread's death."""
        assert self.job is not None
        try:
            res = self._result(errno)
        except Exception:  # whatever a server sent is data
            res = FetchResult(self.job, error="bad_reply", started=self.started)
        res.ended = time.monotonic()
        self.job, self.parts = None, []
        return res

    def _result(self, errno: int) -> FetchResult:
        c = self.curl
        assert self.job is not None
        headers = self._headers()
        res = FetchResult(self.job, started=self.started, headers=headers)
        res.elapsed = time.time() - self.started
        res.status = int(c.getinfo(pycurl.RESPONSE_CODE) or 0)
        res.truncated = self.cut  # the body was cut at the cap: kept, marked (not an error)
        if errno and not self.cut:
            res.error = "blocked_address" if self.blocked else _ERRORS.get(errno, f"curl_{errno}")
            res.status = 0
        else:
            res.body = b"".join(self.parts)
            res.content_type = headers.get("content-type", "")
            res.location = headers.get("location", "") if 300 <= res.status < 400 else ""
            if res.status in RETRY_STATUSES:
                res.retry_after = retry_after(headers.get("retry-after", ""))
        return res


class Fetcher:
    """A background thread that fetches jobs. BEWARE: only that thread touches curl
    handles; the scheduler uses :meth:`submit` and :meth:`get` alone."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.politeness = Politeness.from_settings(settings)
        self._inbox: queue.SimpleQueue[FetchJob] = queue.SimpleQueue()
        self._results: queue.SimpleQueue[FetchResult] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._withdraw = threading.Event()  # give back every job not started (sticky)
        # State of the fetcher thread alone:
        self._queues: dict[str, deque[FetchJob]] = {}  # per host, jobs in schedule order
        self._resting: list[tuple[float, int, str]] = []  # (not before, tie, host)
        self._ready: list[tuple[int, int, int, str]] = []  # (seq, -queued, tie, host)
        self._free_at: dict[str, float] = {}  # host -> monotonic time its next may start
        self._busy: dict[str, int] = {}  # host -> its transfers in flight
        self._listed: set[str] = set()  # hosts in _resting or _ready
        self._connections = settings.politeness_host_connections
        self._tie = itertools.count()
        self.beat = time.monotonic()  # the fetcher thread's last loop: a hung thread stops
        self._wake_r, self._wake_w = socket.socketpair()  # submit() wakes the thread
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._thread = threading.Thread(target=self._run, name="fetcher", daemon=True)
        self._thread.start()

    def submit(self, jobs: list[FetchJob]) -> None:
        """Queue jobs for fetching (never blocks)."""
        for job in jobs:
            self._inbox.put(job)
        if jobs:
            self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # full: a wake is pending; closed: it ended
            self._wake_w.send(b"\0")

    def get(self, timeout: float | None = None) -> FetchResult | None:
        """The next finished result, waiting up to ``timeout`` s (None: do not wait)."""
        try:
            if timeout is None:
                return self._results.get_nowait()
            return self._results.get(timeout=timeout)
        except queue.Empty:
            return None

    def withdraw(self) -> None:
        """Give back every job not started, now and from now on, as a :data:`WITHDRAWN`
        result; transfers running go on."""
        self._withdraw.set()
        self._wake()

    def close(self, wait: float = 10.0) -> None:
        """Stop the thread, waiting up to ``wait`` s; a hung thread (a daemon) is abandoned."""
        self._stop.set()
        self._wake()
        self._thread.join(timeout=wait)
        self._wake_w.close()

    def healthy(self, stall: float) -> bool:
        """False once the thread has died, or has not come round its loop for ``stall`` s."""
        return self._thread.is_alive() and time.monotonic() - self.beat < stall

    def _finish(self, res: FetchResult) -> None:
        """Hand a result over and let the host's next job start after its rest."""
        host = res.job.host
        self._free_at[host] = res.ended + self.politeness.rest(res)
        self._busy[host] -= 1
        if not self._busy[host]:
            del self._busy[host]
        self._list(host)
        self._results.put(res)

    def _room(self, host: str) -> bool:
        """May another of the host's queued jobs start (its rest aside)?"""
        busy = self._busy.get(host, 0)
        if not busy:
            return True
        job = self._queues[host][0]
        return (busy < self._connections and not job.robotstxt and job.delay <= 0
                and not self.politeness.paced)

    def _list(self, host: str) -> None:
        """Put the host on the resting heap if a queued job of its may start; forget an
        idle host."""
        q = self._queues.get(host)
        if not q:
            if host in self._queues and host not in self._busy:
                del self._queues[host]
            return
        if host not in self._listed and self._room(host):
            self._listed.add(host)
            heapq.heappush(self._resting, (self._free_at.get(host, 0.0), next(self._tie), host))

    def _run(self) -> None:
        multi = pycurl.CurlMulti()
        policy = AddressPolicy(self.settings.fetch_allow_net)
        idle = [_Transfer(self.settings, policy) for _ in range(self.settings.fetch_workers)]
        active: dict[pycurl.Curl, _Transfer] = {}
        queues = self._queues
        resting, ready = self._resting, self._ready
        while not self._stop.is_set():
            self.beat = time.monotonic()
            while True:
                try:
                    job = self._inbox.get_nowait()
                except queue.Empty:
                    break
                queues.setdefault(job.host, deque()).append(job)
                self._list(job.host)
            if self._withdraw.is_set():
                self._give_back()
            now = time.monotonic()
            while resting and resting[0][0] <= now:
                host = heapq.heappop(resting)[2]
                q = queues[host]
                heapq.heappush(ready, (q[0].seq, -len(q), next(self._tie), host))
            while ready and idle:
                host = heapq.heappop(ready)[3]
                self._listed.discard(host)
                job = queues[host].popleft()
                self._busy[host] = self._busy.get(host, 0) + 1
                self._list(host)
                tr = idle[-1]
                try:
                    tr.start(job)
                except Exception as e:  # libcurl refused the URL or a header
                    kind = "invalid_url" if isinstance(e, pycurl.error) else "bad_request"
                    self._finish(FetchResult(job, error=kind, started=time.time(),
                                             ended=time.monotonic()))
                    continue
                idle.pop()
                multi.add_handle(tr.curl)
                active[tr.curl] = tr
            if active:
                while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
                    pass
                while True:
                    pending, ok, failed = multi.info_read()
                    for curl, errno in [(c, 0) for c in ok] + [(c, e) for c, e, _ in failed]:
                        multi.remove_handle(curl)
                        tr = active.pop(curl)
                        self._finish(tr.finish(errno))
                        idle.append(tr)
                    if not pending:
                        break
            self._wait(multi, bool(active))
        for tr in list(active.values()) + idle:
            tr.curl.close()
        multi.close()
        self._wake_r.close()

    def _give_back(self) -> None:
        """Hand every queued job back as :data:`WITHDRAWN`."""
        jobs = [job for q in self._queues.values() for job in q]
        for q in self._queues.values():
            q.clear()
        self._resting.clear()
        self._ready.clear()
        self._listed.clear()
        for host in [h for h in self._queues if h not in self._busy]:
            del self._queues[host]
        for job in jobs:
            self._results.put(FetchResult(job, error=WITHDRAWN))

    def _wait(self, multi: pycurl.CurlMulti, active: bool) -> None:
        """Sleep until a socket is ready, jobs come, a rest ends or libcurl's timeout, at
        most ``WAIT_MAX`` s."""
        timeout = WAIT_MAX
        if self._resting:
            timeout = min(timeout, self._resting[0][0] - time.monotonic())
        poll = select.poll()
        poll.register(self._wake_r, select.POLLIN)
        if active:
            curl_ms = multi.timeout()
            if curl_ms >= 0:
                timeout = min(timeout, curl_ms / 1000)
            readers, writers, errors = multi.fdset()
            for fd in set(readers + writers + errors):
                poll.register(fd, (select.POLLIN if fd in readers else 0)
                              | (select.POLLOUT if fd in writers else 0) | select.POLLPRI)
        if timeout > 0 and poll.poll(timeout * 1000):
            with contextlib.suppress(BlockingIOError):
                while self._wake_r.recv(4096):
                    pass
