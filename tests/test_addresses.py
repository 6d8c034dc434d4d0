"""The address policy: public unicast by default, other ranges only when allowed."""

import pytest

from bspcrawl.robots.addresses import AddressPolicy


@pytest.mark.parametrize("address", ["8.8.8.8", "2001:4860:4860::8888", "151.101.1.69",
                                     "1.1.1.1", "192.0.1.1", "2a00:1450:4001::200e",
                                     "64:ff9b::808:808", "2002:808:808::1", "::ffff:8.8.8.8"])
def test_public_addresses_are_permitted(address):
    assert AddressPolicy().permits(address)


@pytest.mark.parametrize("address", [
    "127.0.0.1", "127.1.0.5", "10.1.2.3", "172.16.0.1", "192.168.1.1", "100.64.0.1",
    "169.254.169.254", "0.0.0.0", "224.0.0.1", "239.255.255.250", "240.0.0.1",
    "255.255.255.255", "192.0.2.1", "::1", "::", "fe80::1%eth0", "fc00::1", "ff02::1",
    "::ffff:127.0.0.1", "::ffff:10.0.0.1",
    # regression (issue 14): these passed, or depended on the Python version
    "64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b:1::a00:1", "2002:7f00:1::1",
    "2002:a00:1::", "::127.0.0.1", "::ffff:0:127.0.0.1", "::ffff:0:808:808", "fec0::1",
    "192.0.0.8", "192.0.0.170", "2001::1", "2001:db8::1", "2001:2::1", "3fff::1",
    "5f00::1", "100::1", "192.31.196.1", "192.52.193.1", "192.88.99.1", "198.18.0.1",
    "198.51.100.7", "203.0.113.9", "192.175.48.1", "2620:4f:8000::1", "4000::1"])
def test_non_public_addresses_are_refused_by_default(address):
    assert not AddressPolicy().permits(address)


def test_allowed_networks_open_exactly_their_range():
    policy = AddressPolicy(["127.0.0.0/8", "fd00::/8"])
    assert policy.permits("127.1.0.5") and policy.permits("::ffff:127.0.0.1")
    assert policy.permits("64:ff9b::7f00:1") and not policy.permits("64:ff9b::a00:1")
    assert policy.permits("fd12::1")
    assert not policy.permits("10.0.0.1") and not policy.permits("::1")


def test_malformed_network_is_a_value_error():
    with pytest.raises(ValueError, match="not an IP network"):
        AddressPolicy(["localhost"])
