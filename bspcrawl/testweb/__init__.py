"""A deterministic local web on loopback for bspcrawl's tests, demo and benchmarks.

Submodules, each importing only those before it: :mod:`.config` (:class:`WebConfig`, kinds
and roles), :mod:`.options` (a WebConfig as options and back), :mod:`.adversarial` (what
real crawls meet), :mod:`.model` (:class:`Web` and its ground truth :meth:`Web.truth`),
:mod:`.server` (the asyncio server), :mod:`.hostile` (the fuzzer's web and its audit) and
:mod:`.cli` (``bspcrawl testweb serve | truth | seeds | hostile``).

Example::

    web = Web(WebConfig(pages=300, hosts=10, port=free_port(10)))
    with running(web, log="requests.tsv"):
        ...  # crawl web.seeds(); the fetched URLs must equal web.truth()
"""

import importlib

# name -> submodule; loaded on first use, so that ``bspcrawl run`` (whose argument parser
# knows the testweb subcommands) does not import the server and its asyncio
_EXPORTS = {name: module for module, names in {
    "cli": ("add_arguments", "add_subcommands", "cmd_seeds", "cmd_serve", "cmd_truth",
            "read_seeds"),
    "config": ("ADVERSARIAL", "DEAD", "PAGE", "REDIRECT", "SPECIAL", "TRAPS", "UNRELIABLE",
               "WebConfig"),
    "hostile": ("HostileConfig", "HostileWeb", "audit"),
    "model": ("AGENT", "Truth", "Web", "host_address"),
    "options": ("config_argv", "config_from_args"),
    "server": ("PortInUseError", "TestWebServer", "free_port", "running", "running_process",
               "serve_forever"),
}.items() for name in names}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    """The public names of the submodules, imported when first asked for."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
