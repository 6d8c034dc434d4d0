"""The address policy: public unicast by default, other ranges only when allowed."""

import pytest

from bspcrawl.robots.addresses import AddressPolicy


@pytest.mark.parametrize("address", ["8.8.8.8", "2001:4860:4860::8888", "151.101.1.69"])
def test_public_addresses_are_permitted(address):
    assert AddressPolicy().permits(address)


@pytest.mark.parametrize("address", [
    "127.0.0.1", "127.1.0.5", "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1",
    "169.254.169.254", "0.0.0.0", "224.0.0.1", "239.255.255.250", "240.0.0.1",
    "255.255.255.255", "192.0.2.1", "::1", "::", "fe80::1%eth0", "fc00::1", "ff02::1",
    "::ffff:127.0.0.1", "::ffff:10.0.0.1"])
def test_non_public_addresses_are_refused_by_default(address):
    assert not AddressPolicy().permits(address)


def test_allowed_networks_open_exactly_their_range():
    policy = AddressPolicy(["127.0.0.0/8", "fd00::/8"])
    assert policy.permits("127.1.0.5") and policy.permits("::ffff:127.0.0.1")
    assert policy.permits("fd12::1")
    assert not policy.permits("10.0.0.1") and not policy.permits("::1")


def test_malformed_network_is_a_value_error():
    with pytest.raises(ValueError, match="not an IP network"):
        AddressPolicy(["localhost"])
