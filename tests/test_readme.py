"""The README documents every option of ``bspcrawl run``."""

from dataclasses import fields
from pathlib import Path

from bspcrawl.settings import Settings, _flag

README = (Path(__file__).parent.parent / "README.md").read_text()


def test_every_setting_is_in_the_options_table():
    missing = [f.name for f in fields(Settings) if f"| `{_flag(f.name)}` | `{f.name}` |"
               not in README]
    assert missing == [], "run scripts/options_table.py"
