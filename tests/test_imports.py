"""The import graph runs one way (docs/architecture.md, "Import rules").

Every ``import`` of a bspcrawl module, at any depth (inside functions too), is an edge.
"""

import ast
import os
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "bspcrawl"
ROOMS = {"bspcrawl.intake", "bspcrawl.queue", "bspcrawl.hosts", "bspcrawl.revisits"}
LOOP = {"bspcrawl.superstep", "bspcrawl.scheduler", "bspcrawl.commit", "bspcrawl.bsp",
        "bspcrawl.frontier", "bspcrawl.partition", "bspcrawl.checkpoint", "bspcrawl.cli",
        "bspcrawl.analysis", *ROOMS}
VOCABULARY = {"bspcrawl.messages", "bspcrawl.counters"}
LEAVES = {*VOCABULARY, "bspcrawl.sortedkeys"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def graph() -> dict[str, set[str]]:
    """Module -> the bspcrawl modules it imports."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                           else node.module for a in node.names]
            else:
                continue
            edges[name].update(t for t in targets if t.startswith("bspcrawl") and t != name
                               and t != "bspcrawl")  # the package root holds __version__
    return edges


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def violations(edges: dict[str, set[str]]) -> list[str]:
    """Every import that breaks a rule, as 'a -> b: why'."""
    found = []
    for a, targets in edges.items():
        for b in targets:
            if within(a, "bspcrawl.cbt") and not within(b, "bspcrawl.cbt"):
                found.append(f"{a} -> {b}: cbt/ imports nothing else of ours")
            if a in LEAVES:
                found.append(f"{a} -> {b}: the vocabulary modules and sortedkeys import "
                             "nothing of ours")
            for low, other in (("bspcrawl.robots", "bspcrawl.index"),
                               ("bspcrawl.index", "bspcrawl.robots")):
                if within(a, low) and (within(b, other) or b in LOOP):
                    found.append(f"{a} -> {b}: {low} imports neither {other} nor the loop")
            if within(a, "bspcrawl.browse") and b in LOOP:
                found.append(f"{a} -> {b}: browse/ (a server thread) imports no loop module")
            if (a == "bspcrawl.frontier" or a in ROOMS) and within(b, "bspcrawl.index"):
                found.append(f"{a} -> {b}: the frontier imports nothing of index/")
            if a in ROOMS and b in LOOP:
                found.append(f"{a} -> {b}: a room of the frontier imports neither another "
                             "room nor the loop (frontier.py composes them)")
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles (each as a path that comes back to its start)."""
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    return found


def test_imports_run_one_way():
    assert violations(graph()) == []


def test_no_module_imports_another_that_imports_it_back():
    assert cycles(graph()) == []


def test_the_checks_catch_wrong_way_imports():
    edges = graph()
    edges["bspcrawl.robots.fetcher"].add("bspcrawl.index.validators")
    edges["bspcrawl.cbt.tree"].add("bspcrawl.urls")
    edges["bspcrawl.index.store"].add("bspcrawl.superstep")
    edges["bspcrawl.browse.status"].add("bspcrawl.bsp")
    edges["bspcrawl.sortedkeys"].add("bspcrawl.urls")
    assert len(violations(edges)) == 5
    edges["bspcrawl.messages"].add("bspcrawl.frontier")
    assert cycles(edges) and len(violations(edges)) == 6
    edges["bspcrawl.hosts"].add("bspcrawl.queue")
    edges["bspcrawl.intake"].add("bspcrawl.index.store")
    assert len(violations(edges)) == 8


def test_a_crawl_process_starts_no_blas_threads() -> None:
    """bspcrawl's modules, numpy, scipy and h5py loaded: the process has one thread (an
    OpenBLAS pool spun 0.11 CPU-s in every rank, for matrix products bspcrawl never does;
    MPI, left out here, starts a thread of its own)."""
    import subprocess
    import sys

    code = ("import os, bspcrawl.cli, bspcrawl.commit, numpy, scipy.sparse, h5py; "
            "print(len(os.listdir('/proc/self/task')))")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    assert out.stdout.strip() == "1"


def test_a_parse_worker_loads_neither_mpi_nor_hdf5(tmp_path) -> None:
    """A rank's parse worker (``analysis.Pool``) runs under mpiexec's environment: it must
    not initialise MPI as a rank would, even started from the ``bspcrawl`` script, whose
    imports (the CLI, h5py) a spawned process would otherwise run again."""
    import subprocess
    import sys

    script = tmp_path / "bspcrawl-like"
    script.write_text(
        "from bspcrawl.cli import main\n"
        "if __name__ == '__main__':\n"
        "    from bspcrawl.analysis import Pool\n"
        "    from bspcrawl.counters import Stats\n"
        "    pool = Pool(1, '', Stats())\n"
        "    probe = \"sorted({'mpi4py', 'h5py'} & {m.split('.')[0] for m in "
        "__import__('sys').modules})\"\n"
        "    print(pool.executor.submit(eval, probe).result())\n"
        "    pool.close()\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
