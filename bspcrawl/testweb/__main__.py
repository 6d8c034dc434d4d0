"""``python -m bspcrawl.testweb serve|truth|seeds|hostile``: the test web without the main CLI."""

import sys

from bspcrawl.testweb.cli import main

sys.exit(main())
