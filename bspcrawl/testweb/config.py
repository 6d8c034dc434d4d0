"""What a test web is made of: :class:`WebConfig` (its parameters and their limits, checked
when made), what ``--adversarial`` switches on (:data:`ADVERSARIAL`), which adversarial
hosts a config asks for and in what order (:attr:`WebConfig.special_roles`), and the names
of resource kinds and host roles. It builds nothing: :mod:`.model` and :mod:`.adversarial`
do, from these names.
"""

from __future__ import annotations

from dataclasses import dataclass

PAGE, DEAD, REDIRECT, SPECIAL = 0, 1, 2, 3
"""Resource kinds (values of :attr:`.model.Web.kind`); ``SPECIAL`` resources live on
adversarial hosts (and mirrors) and are answered by :meth:`.model.Web.reply`."""

TRAPS = ("calendar", "session", "deep")
"""Spider-trap kinds (``WebConfig.traps``), one host each."""

UNRELIABLE = ("dead", "reset", "slow", "throttle", "flaky")
"""Roles of hosts whose URLs a correct crawl may fail to fetch."""

ROLES = ("", *UNRELIABLE, "mirror", "nearmirror", "redirects", "junk", *TRAPS)
"""Host roles (:attr:`.model.Web.role`): ``""`` for the polite sites."""

ADVERSARIAL: dict[str, object] = dict(
    expires=0.1, latency_ms=80.0, latency_sigma=0.8, bandwidth_kb=1024.0, dead_hosts=1,
    reset_hosts=1, slow_hosts=1, throttle_hosts=1, flaky_hosts=1, soft404=0.2, mirrors=1,
    redirect_traps=True, junk=True, huge=True, bomb=True, traps=",".join(TRAPS),
)
"""What ``--adversarial`` turns on (:meth:`WebConfig.adversarial`)."""

MAX_HOSTS = 250 * 256
"""Hosts a web may have in all: the addresses ``127.1.0.1`` .. ``127.1.255.250``."""


@dataclass(frozen=True)
class WebConfig:
    """Parameters of a synthetic web; equal configs give byte-identical webs."""

    seed: int = 1  # RNG seed of the whole structure and of every page's HTML
    pages: int = 2000  # number of HTML pages (200 answers); at least `hosts`
    hosts: int = 50  # number of sites, one loopback address each
    port: int = 8765  # TCP port of every site
    min_kb: int = 10  # smallest page, KiB
    max_kb: int = 60  # largest page, KiB
    site_skew: float = 1.0  # site sizes ~ 1/rank**site_skew (1: Zipf, heavy-tailed; 0: alike)
    cross_host: float = 0.15  # fraction of page links that go to another host
    dead_links: float = 0.02  # fraction of links to paths that answer 404
    redirects: float = 0.03  # fraction of pages moved: linked only through a 301/302
    unreachable: float = 0.03  # fraction of pages linked from nowhere (never in the truth)
    seed_hosts: int = 3  # default seeds: home pages of hosts 0 .. seed_hosts-1 (at most all)
    max_links: int = 150  # largest out-degree of a page (power law, mean about 25)
    # Revisits: the web at a later crawl epoch (no effect at epoch 0).
    epoch: int = 0  # crawl epoch; between two epochs some pages change (0: today's web)
    change: float = 0.1  # chance that a page changes between two epochs
    expires: float = 0.0  # fraction of pages sent with an Expires a year ahead (never change)
    # Timing of every host, drawn per host from the seed (0: off; never changes the truth).
    latency_ms: float = 0.0  # median per-host delay before each response, ms
    latency_sigma: float = 0.0  # lognormal sigma of per-host delays and bandwidths (0: all equal)
    bandwidth_kb: float = 0.0  # median per-host bandwidth, KiB/s (0: unlimited)
    # The adversarial web: extra hosts after the polite ones (0, False or "": off).
    dead_hosts: int = 0  # hosts with no listening socket (connection refused)
    reset_hosts: int = 0  # hosts that reset the connection instead of answering a page
    slow_hosts: int = 0  # hosts that answer each request after 1 s, at 2 KiB/s
    throttle_hosts: int = 0  # hosts answering 429 + Retry-After to requests < 1 s apart
    flaky_hosts: int = 0  # hosts answering bursts of 5xx (503 with Retry-After)
    soft404: float = 0.0  # fraction of sites answering unknown paths 200 "not found"
    mirrors: int = 0  # hosts serving a byte-identical copy of a site
    near_mirrors: int = 0  # hosts serving a copy of a site, one small edit a page
    redirect_traps: bool = False  # a host with redirect loops (A->B->A, A->A), an 8-hop chain
    junk: bool = False  # a host of images, PDF, binary, broken, nested, mis-encoded pages
    huge: bool = False  # a 5 MiB page (on the junk host)
    bomb: bool = False  # a gzip bomb: 1 MiB on the wire, 1 GiB inflated (on the junk host)
    traps: str = ""  # spider-trap hosts: comma-separated calendar,session,deep (or all)
    trap_budget: int = 0  # per-host page budget a correct crawler keeps (0: auto, >= 100)

    def __post_init__(self) -> None:
        if self.traps == "all":
            object.__setattr__(self, "traps", ",".join(TRAPS))
        if not 1 <= self.hosts <= MAX_HOSTS:
            raise ValueError(f"hosts must be in 1..{MAX_HOSTS}, not {self.hosts}")
        if self.pages < self.hosts:
            raise ValueError(f"pages ({self.pages}) must be at least hosts ({self.hosts})")
        if not 1 <= self.port <= 65535:
            raise ValueError(f"port must be in 1..65535, not {self.port}")
        if not 4 <= self.min_kb < self.max_kb:
            raise ValueError(f"need 4 <= min_kb < max_kb, not {self.min_kb}, {self.max_kb}")
        if self.site_skew < 0:
            raise ValueError(f"site_skew must be >= 0, not {self.site_skew}")
        for name in ("cross_host", "dead_links", "redirects", "unreachable"):
            value = getattr(self, name)
            if not 0.0 <= value <= 0.5:
                raise ValueError(f"{name} must be in [0, 0.5], not {value}")
        if self.seed_hosts < 1:
            raise ValueError(f"seed_hosts must be positive, not {self.seed_hosts}")
        if self.max_links < 1:
            raise ValueError(f"max_links must be positive, not {self.max_links}")
        for name in ("epoch", "dead_hosts", "reset_hosts", "slow_hosts", "throttle_hosts",
                     "flaky_hosts", "mirrors", "near_mirrors", "trap_budget"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, not {getattr(self, name)}")
        for name in ("change", "expires", "soft404"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], not {getattr(self, name)}")
        for name in ("latency_ms", "latency_sigma", "bandwidth_kb"):
            if not 0.0 <= getattr(self, name) < float("inf"):
                raise ValueError(f"{name} must be a non-negative number, not {getattr(self, name)}")
        wrong = [t for t in self.trap_names if t not in TRAPS]
        if wrong or len(set(self.trap_names)) != len(self.trap_names):
            names = ",".join(TRAPS)
            raise ValueError(f"traps must be a subset of {names} (or all), not {self.traps!r}")
        if self.total_hosts > MAX_HOSTS:
            raise ValueError(f"{self.total_hosts} hosts in all: more than {MAX_HOSTS}")

    @classmethod
    def adversarial(cls, **overrides) -> WebConfig:
        """Every adversarial behaviour on (:data:`ADVERSARIAL`), then ``overrides``."""
        return cls(**{**ADVERSARIAL, **overrides})

    @property
    def trap_names(self) -> list[str]:
        """The spider traps asked for, in :data:`TRAPS` order of the string."""
        return [t.strip() for t in self.traps.split(",") if t.strip()]

    @property
    def special_roles(self) -> list[str]:
        """Roles of the hosts after the polite ones, in host order (see :data:`ROLES`)."""
        roles = ["dead"] * self.dead_hosts + ["reset"] * self.reset_hosts
        roles += ["slow"] * self.slow_hosts + ["throttle"] * self.throttle_hosts
        roles += ["flaky"] * self.flaky_hosts + ["mirror"] * self.mirrors
        roles += ["nearmirror"] * self.near_mirrors
        roles += ["redirects"] * self.redirect_traps
        roles += ["junk"] * (self.junk or self.huge or self.bomb)
        return roles + self.trap_names

    @property
    def total_hosts(self) -> int:
        """Polite hosts plus adversarial ones: the addresses ``free_port`` must check."""
        return self.hosts + len(self.special_roles)
