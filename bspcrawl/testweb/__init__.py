"""A deterministic local web on loopback for bspcrawl's tests, demo and benchmarks.

Submodules, each importing only those listed before it:

- :mod:`~bspcrawl.testweb.config`: :class:`WebConfig` (the parameters of a web, checked),
  :data:`ADVERSARIAL` (what ``--adversarial`` turns on), the resource kinds and host roles;
- :mod:`~bspcrawl.testweb.options`: a WebConfig as command-line options and back
  (:func:`config_from_args`, :func:`config_argv`);
- :mod:`~bspcrawl.testweb.adversarial`: what real crawls meet (dead, resetting, slow,
  throttling and flaky hosts, mirrors, redirect loops, junk, huge pages, gzip bombs, soft
  404s, spider traps), each switched on by a WebConfig field, all by ``--adversarial``;
- :mod:`~bspcrawl.testweb.model`: :class:`Web` (sites, pages, links, robots.txt, dead
  links, redirects, rendered HTML, epochs; the adversarial hosts added by
  :mod:`.adversarial`) and the ground truth :meth:`Web.truth`, the exact set of URLs a
  correct robots.txt-obeying crawl fetches; on an adversarial web also
  :meth:`Web.may_give_up`, :meth:`Web.must_not_fetch` and :meth:`Web.trap_limit`;
- :mod:`~bspcrawl.testweb.server`: an asyncio HTTP/1.1 server, one listening socket per
  host address ``127.1.a.b:PORT``; :func:`running` (a thread, for tests),
  :func:`running_process` (a child process: no shared GIL) and :func:`serve_forever` (CLI);
- :mod:`~bspcrawl.testweb.hostile`: the fuzzer's hostile web (a seeded generator of hostile
  answers, a raw-socket server, :func:`~.hostile.audit` of a crawl of it), apart from the
  rest: it takes only the host addresses of :mod:`.model` and the port helpers of
  :mod:`.server`;
- :mod:`~bspcrawl.testweb.cli`: ``bspcrawl testweb serve | truth | seeds | hostile``.

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
