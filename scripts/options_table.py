"""Rewrite the options table of README.md from the Settings dataclass (run after adding a
setting; tests/test_readme.py checks that every setting is documented)."""

from dataclasses import fields
from pathlib import Path

from bspcrawl.settings import Settings, _flag

README = Path(__file__).resolve().parent.parent / "README.md"
HEAD = "| option | TOML key | default | meaning |"


def table() -> str:
    """The markdown table, one row per setting."""
    rows = [HEAD, "| --- | --- | --- | --- |"]
    for f in fields(Settings):
        unit = f" ({f.metadata['unit']})" if f.metadata["unit"] else ""
        default = "`[]`" if f.type == "list[str]" else f"`{f.default!r}`"
        if f.name == "url_strip_params":
            default = "see `urls.TRACKING_PARAMS`"
        doc = f.metadata["doc"].replace("|", "\\|")
        rows.append(f"| `{_flag(f.name)}` | `{f.name}` | {default} | {doc}{unit} |")
    return "\n".join(rows) + "\n"


def main() -> None:
    text = README.read_text()
    start = text.index(HEAD)
    end = text.index("\n\n", start) + 1
    README.write_text(text[:start] + table() + text[end:])


if __name__ == "__main__":
    main()
