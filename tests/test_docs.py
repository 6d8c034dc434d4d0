"""The documentation's generated tables agree with the code (options, /pages, counters)."""

import re
import runpy
from dataclasses import fields
from pathlib import Path

from bspcrawl.counters import COUNTERS, STATS_DTYPE
from bspcrawl.index.store import PAGES
from bspcrawl.settings import Settings, _flag

ROOT = Path(__file__).parent.parent
gen_docs = runpy.run_path(str(ROOT / "scripts" / "gen_docs.py"))


def test_generated_tables_are_up_to_date():
    assert gen_docs["stale"]() == [], "run scripts/gen_docs.py"


def test_every_setting_page_field_and_counter_is_documented():
    options = (ROOT / "docs" / "options.md").read_text()
    output = (ROOT / "docs" / "output.md").read_text()
    assert [f.name for f in fields(Settings)
            if f"| `{_flag(f.name)}` | `{f.name}` |" not in options] == []
    assert [name for name, _, _ in PAGES if f"| `/pages/{name}` |" not in output] == []
    assert [c.name for c in COUNTERS if f"| `{c.name}` |" not in output] == []
    assert list(STATS_DTYPE.names[2:]) == [c.name for c in COUNTERS]


def test_readme_is_a_front_door_whose_links_resolve():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page}: broken link {target}"
