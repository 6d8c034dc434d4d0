"""Which IP addresses the robots may connect to: the public Internet, plus what is allowed.

By default a robot never connects to loopback, private, shared (CGNAT), link-local,
multicast, reserved or unspecified addresses, so a page cannot steer the crawler at the
crawl host's own services or its network. The check runs on the address libcurl is about
to connect to (``CURLOPT_OPENSOCKETFUNCTION``), after DNS, so a name that resolves (or
re-resolves: DNS rebinding) to a private address is refused too. ``--allow-net CIDR``
(repeatable) opens ranges; the demo and the tests open only ``127.0.0.0/8``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(cidrs: Iterable[str]) -> list[Network]:
    """CIDR strings as networks; ValueError names a malformed one."""
    nets = []
    for cidr in cidrs:
        try:
            nets.append(ipaddress.ip_network(cidr.strip(), strict=False))
        except ValueError:
            raise ValueError(f"--allow-net: not an IP network: {cidr!r}") from None
    return nets


class AddressPolicy:
    """Decides, per resolved address, whether a robot may connect."""

    def __init__(self, allow: Iterable[str] = ()) -> None:
        self.allow = parse_networks(allow)

    def permits(self, address: str) -> bool:
        """True for a public unicast address or one inside an allowed network."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if any(ip in net for net in self.allow if net.version == ip.version):
            return True
        return ip.is_global and not ip.is_multicast
