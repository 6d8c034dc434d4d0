"""The live status page of a running crawl (``bspcrawl run --status-port N``), on rank 0.

The superstep loop (the main thread, the only one that calls MPI) hands
:meth:`StatusBoard.update` the global counters every rank agreed at the last sync; the
server runs in a background thread and reads only what it was handed, so it never calls
MPI and never waits for the crawl. Its stop button does what ``bspcrawl stop DIR`` does
(:func:`~bspcrawl.index.output.request_stop`); the form carries a token drawn at start,
so another site open in the browser cannot post it.
"""

from __future__ import annotations

import secrets
import threading
import time
from pathlib import Path

from bspcrawl.browse import pages
from bspcrawl.browse.server import Response, make_server, not_found, redirect
from bspcrawl.browse.view import StatsData
from bspcrawl.index.output import OutputError, request_stop

MAX_POINTS = 4096  # points kept per series; past it every other one is dropped


class StatusBoard:
    """Rank 0's counters for the status page, and the server thread showing them: the loop
    calls :meth:`update` after each sync and :meth:`close` at the end."""

    def __init__(self, out: Path, host: str = "127.0.0.1", port: int = 0) -> None:
        self.out = out
        self.token = secrets.token_urlsafe(16)
        self.start = time.monotonic()
        self._lock = threading.Lock()
        self._series: list[tuple[float, float, float]] = []  # (s, pages, frontier)
        self._facts: dict[str, object] = {"superstep": 0}
        self.server = make_server(StatusApp(self), host, port)
        self.url = f"http://{host}:{self.server.server_address[1]}/stats"
        self._thread = threading.Thread(target=self.server.serve_forever, name="status-page",
                                        daemon=True)
        self._thread.start()

    def update(self, superstep: int, g: dict[str, int]) -> None:
        """The global counters ``g`` agreed at the sync of ``superstep``."""
        with self._lock:
            self._series.append((time.monotonic() - self.start, g["pages/committed"],
                                 g["frontier/size"]))
            if len(self._series) > MAX_POINTS:
                self._series = self._series[::2]
            self._facts = {"superstep": superstep, "pages": g["pages/committed"],
                           "pages_ok": g["pages/ok"], "errors": g["pages/errors"],
                           "bytes": g["pages/bytes"], "frontier": g["frontier/size"],
                           "urls_seen": g["frontier/seen"],
                           "in_flight": g["window/unreleased"],
                           "stop_requested": bool(g["stop/requested"])}

    def data(self) -> StatsData:
        """A snapshot for the stats page."""
        with self._lock:
            series, facts = list(self._series), dict(self._facts)
        errors = {"transfer": int(facts.get("errors", 0))}  # kinds are known at the end
        return StatsData(facts, [p[0] for p in series], [p[1] for p in series],
                         [p[2] for p in series], errors)

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()
        self._thread.join()


class StatusApp:
    """``/stats`` (live) and ``POST /stop`` of a running crawl."""

    def __init__(self, board: StatusBoard) -> None:
        self.board = board

    def get(self, target: str) -> Response:
        """``/`` goes to ``/stats``, the live page."""
        route = target.partition("?")[0]
        if route == "/":
            return redirect("/stats")
        if route == "/stats":
            return Response(body=pages.stats(self.board.data(), live=True,
                                             stop_token=self.board.token))
        return not_found("no such page")

    def post(self, path: str, form: dict[str, str]) -> Response:
        """``/stop`` with the page's token: ask the crawl to stop (the stop file)."""
        if path != "/stop":
            return not_found("no such page")
        if not secrets.compare_digest(form.get("token", ""), self.board.token):
            return Response(403, pages.error(403, "stale or missing token: reload /stats"))
        try:
            request_stop(self.board.out)
        except OutputError as e:
            return Response(409, pages.error(409, str(e)))
        return redirect("/stats")

