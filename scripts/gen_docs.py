"""Write the generated tables of docs/ from the code: every option (from ``Settings``), the
``/pages`` datasets (from ``index.store.PAGES``) and the ``/stats`` counters (from
``counters.COUNTERS``). Run it after changing any of them; ``tests/test_docs.py`` fails
until the docs agree with the code.

    python scripts/gen_docs.py           # rewrite the tables in place
    python scripts/gen_docs.py --check   # exit 1 if a table is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np

from bspcrawl import counters
from bspcrawl.index.store import PAGES
from bspcrawl.settings import Settings, _flag

DOCS = Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"(<!-- generated: (\w+) -->\n).*?(<!-- end generated -->)", re.S)


def options() -> str:
    """One row per setting: option, TOML key, default, meaning (unit)."""
    rows = ["| option | TOML key | default | meaning |", "| --- | --- | --- | --- |"]
    for f in fields(Settings):
        unit = f" ({f.metadata['unit']})" if f.metadata["unit"] else ""
        default = "`[]`" if f.type == "list[str]" else f"`{f.default!r}`"
        if f.name == "url_strip_params":
            default = "see `urls.TRACKING_PARAMS`"
        doc = f.metadata["doc"].replace("|", "\\|")
        rows.append(f"| `{_flag(f.name)}` | `{f.name}` | {default} | {doc}{unit} |")
    return "\n".join(rows) + "\n"


def pages() -> str:
    """One row per ``/pages`` dataset (``crawl.h5`` adds ``rank``)."""
    rows = ["| dataset | dtype | meaning |", "| --- | --- | --- |"]
    for name, dtype, doc in PAGES:
        kind = "str (UTF-8)" if np.dtype(dtype).kind == "O" else np.dtype(dtype).name
        rows.append(f"| `/pages/{name}` | {kind} | {doc} |")
    rows.append("| `/pages/rank` | int16 | the rank that fetched it (`crawl.h5` only) |")
    return "\n".join(rows) + "\n"


TABLES = {"options": options, "pages": pages, "stats": counters.markdown}


def render(text: str) -> str:
    """``text`` with every generated block filled from the code."""
    return BLOCK.sub(lambda m: m.group(1) + TABLES[m.group(2)]() + m.group(3), text)


def stale() -> list[Path]:
    """The docs pages whose generated tables differ from the code."""
    return [p for p in sorted(DOCS.rglob("*.md")) if render(p.read_text()) != p.read_text()]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only report stale pages")
    args = p.parse_args()
    for path in stale():
        if args.check:
            print(f"{path}: generated tables are out of date (run scripts/gen_docs.py)")
        else:
            path.write_text(render(path.read_text()))
            print(f"wrote {path}")
    if args.check and stale():
        sys.exit(1)


if __name__ == "__main__":
    main()
