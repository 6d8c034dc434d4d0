"""``python -m bspcrawl``: the same as the ``bspcrawl`` command."""

from bspcrawl.cli import main

if __name__ == "__main__":
    main()
