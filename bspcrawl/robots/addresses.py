"""Which IP addresses the fetch workers may connect to: the public Internet, plus what is
allowed.

A page must not steer the crawler at the crawl host's own services or network, so no
address of a special-purpose range is connected to. The ranges are an explicit list (the
IANA Special-Purpose Address Registries, RFC 6890, plus multicast and reserved blocks),
not Python's ``is_global``, which changes between versions: IPv4 :data:`DENY_V4`; IPv6
only global unicast minus :data:`DENY_V6`; an IPv6 address standing for an IPv4 one
(mapped, NAT64, 6to4) is judged by that one. The check runs on the address libcurl is
about to connect to, after DNS (so DNS rebinding is caught too); ``--allow-net CIDR``
opens ranges.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

DENY_V4 = tuple(ipaddress.IPv4Network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
    "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24",
    "192.88.99.0/24", "192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15",
    "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4"))
GLOBAL_V6 = ipaddress.IPv6Network("2000::/3")
DENY_V6 = tuple(ipaddress.IPv6Network(n) for n in (
    "2001::/23", "2001:db8::/32", "2620:4f:8000::/48", "3fff::/20"))
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_6TO4 = ipaddress.IPv6Network("2002::/16")


def parse_networks(cidrs: Iterable[str]) -> list[Network]:
    """CIDR strings as networks; ValueError names a malformed one."""
    nets = []
    for cidr in cidrs:
        try:
            nets.append(ipaddress.ip_network(cidr.strip(), strict=False))
        except ValueError:
            raise ValueError(f"--allow-net: not an IP network: {cidr!r}") from None
    return nets


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (IPv4-mapped, NAT64, 6to4), or None."""
    if ip in _MAPPED or ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _6TO4:
        return ipaddress.IPv4Address((int(ip) >> 80) & 0xFFFFFFFF)
    return None


def public(ip: Address) -> bool:
    """True for an address outside every special-purpose range."""
    if isinstance(ip, ipaddress.IPv4Address):
        return not any(ip in net for net in DENY_V4)
    v4 = embedded_ipv4(ip)
    if v4 is not None:
        return public(v4)
    return ip in GLOBAL_V6 and not any(ip in net for net in DENY_V6)


class AddressPolicy:
    """Decides, per resolved address, whether a fetch worker may connect."""

    def __init__(self, allow: Iterable[str] = ()) -> None:
        self.allow = parse_networks(allow)

    def permits(self, address: str) -> bool:
        """True for a public address or one inside an allowed network."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
        forms: list[Address] = [ip]
        if isinstance(ip, ipaddress.IPv6Address) and (v4 := embedded_ipv4(ip)) is not None:
            forms.append(v4)
        if any(a in net for a in forms for net in self.allow if net.version == a.version):
            return True
        return public(ip)
