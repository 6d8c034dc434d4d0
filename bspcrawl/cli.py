"""The ``bspcrawl`` command: run, resume, stop, rank, inspect, search, serve, export,
testweb (serve, truth, seeds, hostile) and demo.

Mistakes in use (a bad option, a missing or malformed seed file, an output directory that
holds something else) end with one line ``bspcrawl: error: ...`` on stderr and exit code 2,
printed once (by rank 0) however many ranks share the mistake.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from bspcrawl import __version__
from bspcrawl import settings as settings_mod
from bspcrawl.index.output import OutputError, prepare
from bspcrawl.index.store import LayoutError
from bspcrawl.settings import Settings

if TYPE_CHECKING:
    from mpi4py import MPI

    from bspcrawl.browse.status import StatusBoard

EXIT_USAGE = 2
EXIT_DISK_FULL = 3  # no space left: the crawl stopped at its last checkpoint, resumable
DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class UsageError(Exception):
    """A mistake in how bspcrawl was called; the CLI prints it as one line."""


_LAUNCHER_RANK = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")  # MPICH, Open MPI, PMIx


def _launched_rank() -> str | None:
    """This process's rank from the launcher's environment (None: not under mpiexec)."""
    return next((os.environ[v] for v in _LAUNCHER_RANK if v in os.environ), None)


def _is_rank0() -> bool:
    return _launched_rank() in (None, "0")


def fail(message: str) -> NoReturn:
    """Print one error line (on rank 0 only) and exit with code 2. Every rank finalizes MPI
    here: under ``python -m mpi4py`` a non-zero exit would become an MPI_Abort."""
    if _is_rank0():
        print(f"bspcrawl: error: {message}", file=sys.stderr)
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        mpi.Finalize()
    sys.exit(EXIT_USAGE)


def note(message: str) -> None:
    """Print one ``bspcrawl: note: ...`` line (on rank 0 only)."""
    if _is_rank0():
        print(f"bspcrawl: note: {message}", file=sys.stderr)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        fail(f"{message} (see '{self.prog} --help')")


def read_seeds(path: str) -> list[str]:
    """Seed URLs from a file, one per line; blank lines and '#' comments are skipped. A URL
    with userinfo is refused (the crawl would store the credentials in its files)."""
    from bspcrawl.urls import has_userinfo, parse

    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise UsageError(f"cannot read seed file {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"seed file {path} is not UTF-8 text") from None
    seeds = []
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip() if line.lstrip().startswith("#") else line.strip()
        if not text:
            continue
        url = parse(text)
        if url is None:
            raise UsageError(f"seed file {path} line {number}: not an absolute http(s) URL: "
                             f"{text[:200]!r}")
        if has_userinfo(text):
            raise UsageError(f"seed file {path} line {number}: a URL with credentials "
                             "(user:password@) is refused: every URL is stored in clear")
        seeds.append(url)
    if not seeds:
        raise UsageError(f"seed file {path} holds no seed URL")
    return seeds


def cmd_run(args: argparse.Namespace) -> None:
    """``bspcrawl run``: crawl on every rank of MPI.COMM_WORLD, then join the output."""
    s = settings_mod.from_args(args, note=note)
    if not (s.seeds or s.recrawl) or not s.out:
        raise UsageError("run needs --seeds FILE (or --recrawl DIR) and --out DIR")

    def setup() -> tuple[Settings, list[str], None]:
        seeds = read_seeds(s.seeds) if s.seeds else []
        if s.recrawl:
            s.recrawl, seeds = _previous(Path(s.recrawl), Path(s.out), seeds)
        prepare(Path(s.out), s.overwrite)
        return s, seeds, None

    _crawl(args, Path(s.out), setup)


def _previous(previous: Path, out: Path, seeds: list[str]) -> tuple[str, list[str]]:
    """Check the crawl a recrawl follows; its absolute path, and the seeds (``seeds``,
    or the previous crawl's own when none are given)."""
    from bspcrawl.index.inspect import open_crawl
    from bspcrawl.index.validators import check_saved

    if previous.resolve() == out.resolve():
        raise UsageError(f"--recrawl {previous}: recrawl into a new --out, not into the "
                         "previous crawl")
    with open_crawl(previous) as f:
        try:
            ranks = [f[f"ranks/{r:04d}"] for r in range(int(f.attrs["ranks"]))]
            if not all("history" in g for g in ranks):
                raise UsageError(f"--recrawl {previous}: that crawl kept no history "
                                 "(bspcrawl before 0.2); crawl it afresh")
            for g in ranks:  # what every rank will carry, read once here
                check_saved(g["validators"])
                for name in ("history", "validators"):
                    for column in g[name].values():
                        column[()]
        except (OSError, KeyError, ValueError) as e:  # damaged (truncated, edited) or older
            raise UsageError(f"--recrawl {previous}: cannot read that crawl: {e}") from None
        return str(previous.resolve()), seeds or str(f.attrs["seeds"]).split()


def cmd_resume(args: argparse.Namespace) -> None:
    """``bspcrawl resume DIR``: continue a crawl from its last complete checkpoint, on
    however many ranks this is started with; options given override the stored ones."""
    from bspcrawl import checkpoint
    from bspcrawl.index.store import rank_path, split_rank_file

    out = Path(args.dir)

    def setup() -> tuple[Settings, list[str], tuple[int, int]]:
        if not out.is_dir():
            raise UsageError(f"{out} is not a directory")
        record = checkpoint.latest(out)
        superstep, _ = checkpoint.read_all(out, record)  # every file readable, or the error
        s = settings_mod.from_args(args, base=record["settings"], note=note)
        joined = [r for r in range(record["ranks"]) if rank_path(out, r).exists()]
        if joined and superstep != record["superstep"]:
            raise UsageError(f"the crawl in {out} joined its files at checkpoint "
                             f"{record['superstep']}, whose state is damaged; cannot resume")
        for r in joined:  # the crawl stopped and joined its files: back to segments
            split_rank_file(out, r, superstep)
        for name in ("crawl.h5", "stop"):
            (out / name).unlink(missing_ok=True)
        return s, record["seeds"], (superstep, record["ranks"])

    _crawl(args, out, setup)


def _crawl(args: argparse.Namespace, out: Path,
           setup: Callable[[], tuple[Settings, list[str], tuple[int, int] | None]]) -> None:
    """Rank 0 runs ``setup`` (checks, seeds, settings, the checkpoint to resume); every
    rank crawls; rank 0 joins the files and reports."""
    from mpi4py import MPI

    from bspcrawl import checkpoint
    from bspcrawl.bsp import barrier
    from bspcrawl.index.archive import WARC_DIR
    from bspcrawl.index.cdxj import merge as merge_cdxj
    from bspcrawl.index.output import join
    from bspcrawl.progress import Progress
    from bspcrawl.superstep import Crawl, Resume

    comm = MPI.COMM_WORLD
    error, plan, status = None, None, None
    if comm.Get_rank() == 0:
        try:
            plan = setup()
            if plan[0].status_port:
                status = _status_board(out, plan[0])
        except (UsageError, OutputError, LayoutError, checkpoint.CheckpointError,
                settings_mod.SettingsError) as e:
            error = str(e)
    error, plan = comm.bcast((error, plan), root=0)
    if error:
        fail(error)
    s, seeds, at = plan
    try:
        resume = None
        if at is not None:
            superstep, ranks = at
            wanted = [comm.Get_rank()] if ranks == comm.Get_size() else range(ranks)
            states = [checkpoint.read(out, r, superstep) if r in wanted else (None, {})
                      for r in range(ranks)]
            resume = Resume(superstep, states)
        progress = Progress(args.progress, s.log_interval) if comm.Get_rank() == 0 else None
        outcome = Crawl(comm, s, out, seeds, progress, resume, status).run()
        barrier(comm)
        if comm.Get_rank() == 0:
            summary = {"supersteps": outcome.supersteps, "urls_seen": outcome.seen,
                       "wall_s": outcome.wall_s, "stopped": outcome.stopped,
                       "seeds": "\n".join(seeds)}
            path = join(out, comm.Get_size(), summary)
            if (out / WARC_DIR).is_dir():
                merge_cdxj(out)
            if progress:
                progress.update(outcome.supersteps, {
                    "pages/committed": outcome.pages, "frontier/size": outcome.frontier,
                    "window/unreleased": 0, "pages/errors": outcome.errors}, final=True)
            print(f"bspcrawl: {outcome.pages} pages ({outcome.pages_ok} ok) in "
                  f"{outcome.wall_s:.1f} s on {comm.Get_size()} ranks, "
                  f"{outcome.supersteps} supersteps, stopped: {outcome.stopped}; {path}",
                  file=sys.stderr)
    except OSError as e:
        if e.errno not in DISK_FULL:
            _abort_others(comm)
            raise
        print(f"bspcrawl: error: rank {comm.Get_rank()} cannot write to {out} ("
              f"{os.strerror(e.errno)}); the crawl stopped, its last complete checkpoint is "
              f"kept: free space, then 'bspcrawl resume {out}' goes on from there",
              file=sys.stderr)
        if comm.Get_size() > 1:
            comm.Abort(EXIT_DISK_FULL)
        sys.exit(EXIT_DISK_FULL)
    except Exception:
        _abort_others(comm)
        raise
    finally:
        if status is not None:
            status.close()


def _status_board(out: Path, s: Settings) -> StatusBoard:
    """Start the live status page of ``--status-port`` (rank 0) and say where it is."""
    from bspcrawl.browse.status import StatusBoard

    board = StatusBoard(out, s.status_host, s.status_port)
    note(f"live status page at {board.url}")
    return board


def _abort_others(comm: MPI.Comm) -> None:
    """After an uncaught error on this rank: print it and abort every rank, so that the
    others do not wait for this one forever (under P > 1)."""
    if comm.Get_size() > 1:
        import traceback

        traceback.print_exc()
        comm.Abort(1)


def cmd_stop(args: argparse.Namespace) -> None:
    """``bspcrawl stop DIR``: ask a running crawl to stop at its next superstep (with a
    checkpoint, so that ``bspcrawl resume DIR`` continues it)."""
    from bspcrawl.index.output import request_stop

    out = Path(args.dir)
    request_stop(out)
    print(f"bspcrawl: asked the crawl in {out} to stop", file=sys.stderr)


def cmd_rank(args: argparse.Namespace) -> None:
    """``bspcrawl rank DIR``: PageRank of a finished crawl's pages, on every rank of
    ``mpiexec -n P`` (any P), written into its files (``pagerank.py``)."""
    from mpi4py import MPI

    from bspcrawl import pagerank
    from bspcrawl.index.inspect import open_crawl

    comm = MPI.COMM_WORLD
    out = Path(args.dir)
    error, sizes = None, None
    if comm.Get_rank() == 0:
        try:
            if not 0 < args.damping < 1 or not args.tolerance > 0 or args.max_iterations < 1:
                raise UsageError("--damping must be in (0, 1), --tolerance above 0 and "
                                 "--max-iterations at least 1")
            open_crawl(out).close()
            sizes = pagerank.rank_files(out)
        except (UsageError, OutputError) as e:
            error = str(e)
        except (OSError, KeyError) as e:  # a damaged file: h5py's errors
            error = f"cannot read the crawl in {out}: {e}"
    error, sizes = comm.bcast((error, sizes), root=0)
    if error:
        fail(error)
    try:
        result = pagerank.pagerank(
            comm, sizes, lambda lo, hi: pagerank.read_graph(out, sizes, lo, hi),
            args.damping, args.tolerance, args.max_iterations)
        whole = pagerank.gather(comm, result.x, pagerank.blocks(sum(sizes), comm.Get_size()))
        if comm.Get_rank() == 0:
            pagerank.store(out, sizes, whole, {
                "damping": args.damping, "tolerance": args.tolerance,
                "iterations": result.iterations, "residual": result.residual,
                "pages": result.pages, "edges": result.edges, "dangling": result.dangling,
                "ranks": comm.Get_size(), "computed": time.time()})
            print(f"bspcrawl: PageRank of {result.pages} pages, {result.edges} edges "
                  f"({result.dangling} dangling): {result.iterations} iterations on "
                  f"{comm.Get_size()} ranks, L1 change {result.residual:.2e}; setup "
                  f"{result.setup_s:.2f} s, {result.ns_per_edge:.1f} ns per edge per iteration",
                  file=sys.stderr)
            if result.residual >= args.tolerance:
                note(f"stopped at --max-iterations {args.max_iterations} before the L1 "
                     f"change fell below --tolerance {args.tolerance}")
    except Exception:
        _abort_others(comm)
        raise


def cmd_inspect(args: argparse.Namespace) -> None:
    """``bspcrawl inspect DIR``: summary (or --json, or --urls) of a finished crawl."""
    if args.at is not None and not (args.history or args.body):
        raise UsageError("--at goes with --history URL or --body URL")
    try:
        _inspect(args, Path(args.dir))
    except BrokenPipeError:
        raise
    except (OSError, KeyError) as e:  # a damaged file (truncated, edited): h5py's errors
        raise OutputError(f"cannot read the crawl in {args.dir}: {e}") from None


def _inspect(args: argparse.Namespace, out: Path) -> None:
    from bspcrawl.index.inspect import summary, urls

    if args.history or args.body:
        _inspect_versions(out, args.history or args.body, args.at, bool(args.body))
        return
    if args.urls:
        for url, status in urls(out):
            print(f"{url}\t{status}")
        return
    if args.duplicates:
        _inspect_duplicates(out)
        return
    info = summary(out)
    if args.json:
        print(json.dumps(info))
        return
    for key, value in info.items():
        if key == "files":
            value = "\n  ".join([""] + value)
        elif key == "counters":
            value = "".join(f"\n  {name:24} {n}" for name, n in value.items())
        elif key == "pagerank":
            value = (f"{value['iterations']} iterations on {value['ranks']} ranks, damping "
                     f"{value['damping']}, L1 change {value['residual']:.1e}" if value
                     else f"none yet ('bspcrawl rank {out}')")
        print(f"{key:14} {value}")


def _inspect_duplicates(out: Path) -> None:
    """``inspect --duplicates``: one header line per cluster (exact or near, its size),
    then its URLs indented, each with its content fingerprint."""
    from bspcrawl.index.duplicates import listing

    found = listing(out)
    for cluster in found:
        print(f"{'exact' if cluster.exact else 'near'}\t{len(cluster.rows)} pages")
        for url, fp in zip(cluster.urls, cluster.content_fp.tolist(), strict=True):
            print(f"  {url}\tcontent {fp:016x}")
    exact = sum(c.exact for c in found)
    print(f"bspcrawl: {len(found)} clusters of duplicates ({exact} exact, "
          f"{len(found) - exact} near), {sum(len(c.rows) for c in found)} pages",
          file=sys.stderr)


def _inspect_versions(out: Path, url: str, at: str | None, print_body: bool) -> None:
    """``inspect --history URL`` (by year and month), ``--at`` (the nearest version) and
    ``--body`` (its stored bytes, the newest version's without ``--at``)."""
    from datetime import UTC, datetime

    from bspcrawl.index import inspect

    found = inspect.versions(out, url)
    if not found:
        raise UsageError(f"{url} was never fetched in the crawl in {out}")
    if print_body:
        kept = [item for item in found if item[1] is not None] or found
        pick = inspect.nearest(kept, inspect.parse_time(at)) if at else kept[-1]
        assert pick is not None
        sys.stdout.buffer.write(inspect.body(*pick))
        return
    if at:
        pick = inspect.nearest(found, inspect.parse_time(at))
        assert pick is not None
        print(inspect.format_version(*pick, out))
        return
    print(f"{url}: {len(found)} version{'s' * (len(found) > 1)}")
    month = ""
    for version, path in found:
        when = datetime.fromtimestamp(version.time, UTC).strftime("%Y-%m")
        if when != month:
            print(when)
            month = when
        print("  " + inspect.format_version(version, path, out))


def cmd_serve(args: argparse.Namespace) -> None:
    """``bspcrawl serve DIR``: browse a finished crawl in a local web app (read-only)."""
    from bspcrawl.browse.server import BrowseApp, make_server
    from bspcrawl.browse.view import CrawlView

    view = CrawlView(Path(args.dir))
    server = make_server(BrowseApp(view), args.host, args.port)
    host, port = server.server_address[:2]
    print(f"bspcrawl: serving {args.dir} at http://{host}:{port}/ (Ctrl-C stops)",
          file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def cmd_export(args: argparse.Namespace) -> None:
    """``bspcrawl export DIR --wacz FILE``: package the crawl as a WACZ file."""
    from bspcrawl.wacz import export

    path = export(Path(args.dir), Path(args.wacz))
    print(f"bspcrawl: wrote {path}", file=sys.stderr)


def cmd_search(args: argparse.Namespace) -> None:
    """``bspcrawl search DIR QUERY``: the best pages of a finished crawl for QUERY (alone,
    or under mpiexec: each rank searches its share of the rank files)."""
    from bspcrawl import search

    if args.top < 1:
        raise UsageError(f"--top must be >= 1, got {args.top}")
    comm = None
    if _launched_rank() is not None:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD if MPI.COMM_WORLD.Get_size() > 1 else None
    rank, size = (comm.Get_rank(), comm.Get_size()) if comm else (0, 1)
    out = Path(args.dir)
    try:
        search.Query.parse(args.query, args.stop_words)  # a query without words: one line
        searcher = search.Searcher(search.open_shards(out, rank, size), plain=args.plain,
                                   comm=comm)
        results = search.search(searcher, out, args.query, args.top, args.explain,
                                args.stop_words)
    except search.SearchError as e:
        raise UsageError(str(e)) from None
    except (OSError, KeyError) as e:  # a damaged file (truncated, edited): h5py's errors
        raise OutputError(f"cannot read the crawl in {out}: {e}") from None
    if rank:
        return
    if args.json:
        print(json.dumps({"query": args.query, "results": [
            {k: v for k, v in dataclasses.asdict(r).items() if v is not None or k != "explain"}
            for r in results]}))
        return
    _print_results(results)


def _print_results(results: list) -> None:
    """``bspcrawl search``'s text output: one block per result."""
    from datetime import UTC, datetime

    for number, r in enumerate(results, 1):
        when = datetime.fromtimestamp(r.fetch_time, UTC).strftime("%Y-%m-%d %H:%M:%S")
        folded = f"  (+{r.duplicates} duplicates)" if r.duplicates else ""
        print(f"{number}. {r.title or '(no title)'}\n   {r.url}\n   score {r.score:.4f}  "
              f"fetched {when} UTC{folded}")
        if r.snippet:
            print(f"   {r.snippet}")
        if r.explain is not None:
            for key, value in r.explain.items():
                if key == "terms":
                    for t in value:
                        print("   " + "  ".join(f"{k} {v}" for k, v in t.items()))
                else:
                    print(f"   {key} {value}")
    if not results:
        print("no page matches", file=sys.stderr)


def _mpiexec() -> str:
    """The mpiexec beside this Python (the mpich wheel's), else the one on PATH."""
    local = Path(sys.executable).parent / "mpiexec"
    found = str(local) if local.exists() else shutil.which("mpiexec")
    if not found:
        raise UsageError("no mpiexec found: install the 'mpich' package or an MPI")
    return found


def cmd_demo(args: argparse.Namespace) -> None:
    """``bspcrawl demo``: serve the local web, crawl it with mpiexec -n P, summarise."""
    from bspcrawl.testweb import Web, config_from_args, running

    out = Path(args.out)
    overwrite = args.overwrite or args.out == DEMO_OUT
    prepare(out, overwrite)
    web = Web(config_from_args(args))
    with tempfile.TemporaryDirectory() as tmp, running(web):
        seeds = Path(tmp) / "seeds.txt"
        seeds.write_text("\n".join(web.seeds()) + "\n")
        print(f"bspcrawl demo: {web.config.pages} pages on {web.config.hosts} hosts, "
              f"crawling with {args.ranks} ranks into {out}/", file=sys.stderr)
        progress = "bar" if sys.stderr.isatty() else "log"
        cmd = [_mpiexec(), "-n", str(args.ranks), sys.executable, "-m", "mpi4py", "-m",
               "bspcrawl", "run", "--seeds", str(seeds), "--out", str(out), "--overwrite",
               "--min-host-delay", "0", "--response-factor", "0", "--allow-net", "127.0.0.0/8",
               "--progress", progress]
        code = subprocess.call(cmd, env={**os.environ, "MPIEXEC_TIMEOUT": "3600"})
    if code:
        raise UsageError(f"the crawl failed (mpiexec exit code {code})")
    args.dir, args.json, args.urls, args.duplicates = str(out), False, False, False
    args.history = args.body = args.at = None
    cmd_inspect(args)
    print(f"\nnext (in the virtualenv): bspcrawl rank {out} && bspcrawl search {out} 'some words'"
          f"; bspcrawl serve {out} to browse the crawl at http://127.0.0.1:8080/",
          file=sys.stderr)


DEMO_OUT = "demo-out"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    from bspcrawl.testweb import add_arguments as add_web
    from bspcrawl.testweb import add_subcommands

    p = _Parser(prog="bspcrawl", description="A bulk-synchronous parallel web crawler on MPI.")
    p.add_argument("--version", action="version", version=f"bspcrawl {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="crawl from seeds (under mpiexec -n P, or alone)")
    settings_mod.add_arguments(run)
    run.add_argument("--progress", choices=("auto", "bar", "log", "none"), default="auto",
                     help="progress display (auto: a live line on a terminal, else log "
                     "lines) (default: auto)")
    run.set_defaults(func=cmd_run)

    res = sub.add_parser("resume", help="continue a crawl from its last complete checkpoint",
                         description="Continue a crawl from its last complete checkpoint, on "
                         "any number of ranks. It keeps its stored settings; the options "
                         "given override them (the defaults shown are bspcrawl's own).")
    res.add_argument("dir", help="the crawl's output directory")
    settings_mod.add_arguments(res)
    res.add_argument("--progress", choices=("auto", "bar", "log", "none"), default="auto",
                     help="progress display (default: auto)")
    res.set_defaults(func=cmd_resume)

    stop = sub.add_parser("stop", help="stop a running crawl at its next superstep")
    stop.add_argument("dir", help="the crawl's output directory")
    stop.set_defaults(func=cmd_stop)

    ins = sub.add_parser("inspect", help="summarise a finished crawl")
    ins.add_argument("dir", help="the crawl's output directory")
    what = ins.add_mutually_exclusive_group()
    what.add_argument("--json", action="store_true", help="one JSON object")
    what.add_argument("--urls", action="store_true", help="every URL and its status, TSV")
    what.add_argument("--history", metavar="URL",
                      help="every fetched version of URL, by year and month")
    what.add_argument("--body", metavar="URL", help="the stored body of URL (newest version)")
    what.add_argument("--duplicates", action="store_true",
                      help="clusters of exact (same body) and near-duplicate (SimHash within "
                      "3 bits) pages")
    ins.add_argument("--at", metavar="TIME", help="with --history or --body: the version "
                     "nearest to TIME (@UNIX_SECONDS, YYYYMMDDhhmmss or ISO 8601, UTC)")
    ins.set_defaults(func=cmd_inspect)

    srv = sub.add_parser("serve", help="browse a finished crawl in a local web app: cached "
                         "pages by date, versions, diffs, search, stats")
    srv.add_argument("dir", help="the crawl's output directory")
    srv.add_argument("--host", default="127.0.0.1",
                     help="address to listen on (default: 127.0.0.1, this machine only)")
    srv.add_argument("--port", type=int, default=8080, help="port (default: 8080; 0: any)")
    srv.set_defaults(func=cmd_serve)

    exp = sub.add_parser("export", help="package a finished crawl (WARC, CDXJ, pages) as WACZ")
    exp.add_argument("dir", help="the crawl's output directory")
    exp.add_argument("--wacz", required=True, metavar="FILE", help="the WACZ file to write")
    exp.set_defaults(func=cmd_export)

    rank = sub.add_parser("rank", help="PageRank of a finished crawl's pages "
                          "(under mpiexec -n P, any P, or alone)")
    rank.add_argument("dir", help="the crawl's output directory")
    rank.add_argument("--damping", type=float, default=0.85,
                      help="the probability of following a link (default: 0.85)")
    rank.add_argument("--tolerance", type=float, default=1e-10,
                      help="stop once an iteration changes the vector by less than this, "
                      "in L1 norm (default: 1e-10)")
    rank.add_argument("--max-iterations", type=int, default=1000,
                      help="stop after this many iterations anyway (default: 1000)")
    rank.set_defaults(func=cmd_rank)

    sea = sub.add_parser("search", help="the best pages of a finished crawl for a query",
                         description="Search a finished crawl: BM25F over title, headings, "
                         "body and anchor text, with PageRank and phrase hits "
                         "(docs/search.md). Under mpiexec each rank searches its share of "
                         "the rank files.")
    sea.add_argument("dir", help="the crawl's output directory")
    sea.add_argument("query", help="the words to search for")
    sea.add_argument("--top", type=int, default=10, metavar="K",
                     help="how many results (default: 10)")
    sea.add_argument("--json", action="store_true", help="one JSON object")
    sea.add_argument("--explain", action="store_true", help="each part of each score")
    sea.add_argument("--plain", action="store_true", help="plain BM25 over the page text "
                     "(no fields, anchor text, phrase hits or PageRank)")
    sea.add_argument("--stop-words", action="store_true",
                     help="leave common English words out of the query")
    sea.set_defaults(func=cmd_search)

    tw = sub.add_parser("testweb", help="the deterministic local web (serve, truth, seeds), "
                        "and the fuzzer's hostile web (hostile)")
    add_subcommands(tw.add_subparsers(dest="action", required=True, parser_class=_Parser))
    tw.set_defaults(web_errors=(OSError, ValueError))

    demo = sub.add_parser("demo", help="serve the local web and crawl it with mpiexec")
    add_web(demo, "demo")
    demo.add_argument("--ranks", type=int, default=2, help="MPI ranks (default: 2)")
    demo.add_argument("--out", default=DEMO_OUT, help=f"output directory (default: {DEMO_OUT})")
    demo.add_argument("--overwrite", action="store_true", help="replace a crawl in --out")
    demo.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``bspcrawl`` console script."""
    args = build_parser().parse_args(argv)
    usage_errors = (UsageError, OutputError, LayoutError, settings_mod.SettingsError,
                    *getattr(args, "web_errors", ()))
    try:
        sys.exit(args.func(args) or 0)
    except usage_errors as e:
        fail(str(e))
    except KeyboardInterrupt:
        fail("interrupted")
    except BrokenPipeError:  # the reader of our output went away (| head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":
    main()
