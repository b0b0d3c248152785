"""Which targets a webhook may have: public addresses only (unless allowed), in any spelling,
checked on save (through the API) and by `transport.target_check`."""

import pytest

from delivery.webhooks import transport
from tests.support.factories import client_for

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
     "0.0.0.0", "224.0.0.1", "::1", "fe80::1", "fc00::1", "::ffff:127.0.0.1",  # noqa: S104
     "240.0.0.1"],
)  # fmt: skip
def test_internal_addresses_are_not_public(address):
    assert not transport.is_public_address(address)


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"])
def test_public_addresses(address):
    assert transport.is_public_address(address)


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1/", "http://localhost:8000/x", "https://10.0.0.5/", "http://[::1]/",
     "http://169.254.169.254/latest/meta-data/", "file:///etc/passwd", "http://no-such-host.invalid/",
     "http://u:p@example.org/"],
)  # fmt: skip
def test_target_check_refuses(url, settings):
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = False
    with pytest.raises(transport.TargetRefused):
        transport.target_check(url)


ISSUE_16_TARGETS = [
    "http://[::127.0.0.1]/",  # IPv4-compatible
    "http://[::7f00:1]:8708/",
    "http://[64:ff9b::7f00:1]/",  # NAT64 of loopback
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64 of the cloud metadata address
    "http://[2002:7f00:1::]/",  # 6to4 of loopback
    "http://[::ffff:0:7f00:1]/",  # IPv4-translated
    "http://[fec0::1]/",  # deprecated site-local
    "http://192.0.0.8/",  # IETF protocol assignments
    "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",  # Teredo, client 192.0.2.45
    "http://[64:ff9b:1::a9fe:a9fe]/",  # local-use NAT64
    "http://93.184.216.34:0/",  # port 0 of a public address
]


@pytest.mark.parametrize("url", ISSUE_16_TARGETS)
def test_internal_targets_in_any_ipv6_spelling_are_refused_on_save(url, project, manager, settings):
    """Regression (issue 16, finding 8): these were accepted on save."""
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = False
    response = client_for(manager).post(
        f"/api/projects/{project.pk}/webhooks/", {"url": url}, format="json"
    )
    assert response.status_code == 400, response.content
    message = response.json()["error"]["fields"]["url"][0]
    if ":0/" not in url:
        assert "TALLY_WEBHOOK_ALLOW_INTERNAL" in message  # issue 17: say how to allow them


@pytest.mark.parametrize(
    "address",
    ["64:ff9b::808:808", "::ffff:8.8.8.8", "2002:808:808::1", "2606:2800:220:1:248:1893:25c8:1946"],
)
def test_public_addresses_inside_ipv6_stay_allowed(address):
    assert transport.is_public_address(address)
