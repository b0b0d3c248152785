"""Webhooks against real local HTTP receivers: signature, retries with backoff, the delivery log,
and refused internal targets."""

import hashlib
import hmac
import json
import socket
from datetime import timedelta

import pytest
from django.utils import timezone

from config.celery import app as celery_app
from learning import services, tasks
from learning.models import WebhookDelivery
from learning.webhooks import outbox, transport
from learning.webhooks import services as webhook_services
from tests.factories import client_for
from tests.learning.crowd import answer_tasks
from tests.learning.receivers import start_receiver

pytestmark = pytest.mark.django_db
SECRET = "a-shared-secret-of-some-length"


@pytest.fixture
def allow_internal(settings):
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = True


@pytest.fixture
def receiver():
    made = []

    def make(*args, **kwargs):
        made.append(start_receiver(*args, **kwargs))
        return made[-1]

    yield make
    for r in made:
        r.close()


def retrain_with_hook(project, crowd, url):
    webhook_services.webhook_create(project=project, url=url, secret=SECRET)
    answer_tasks(project, crowd, 60)
    return tasks.retrain_and_push(project_id=project.pk, trigger="manual")


def test_delivery_is_signed_and_verifies(project, crowd, allow_internal, eager, receiver):
    target = receiver([200])
    outcome = retrain_with_hook(project, crowd, target.url)
    assert len(target.requests) == 1
    request = target.requests[0]
    assert request["path"] == "/hook?x=1"
    body, headers = request["body"], request["headers"]
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["X-Tally-Signature"], expected)
    payload = json.loads(body)
    assert payload["event"] == headers["X-Tally-Event"] == "report.created"
    assert payload["version"] == outcome.version.number and payload["project"] == project.pk
    assert str(payload["sent_at"]) == headers["X-Tally-Timestamp"]
    assert str(payload["delivery"]) == headers["X-Tally-Delivery"]
    assert headers["Content-Type"] == "application/json"
    assert headers["Host"].startswith("127.0.0.1:")
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "succeeded" and delivery.attempts == 1
    assert delivery.response_code == 200 and delivery.delivered_at
    # A wrong secret does not verify.
    wrong = "sha256=" + hmac.new(b"other", body, hashlib.sha256).hexdigest()
    assert not hmac.compare_digest(headers["X-Tally-Signature"], wrong)


def test_failing_receiver_is_retried_and_logged(
    project, crowd, manager, allow_internal, eager, receiver
):
    target = receiver([500, 503, 200])
    retrain_with_hook(project, crowd, target.url)
    assert len(target.requests) == 3
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "succeeded" and delivery.attempts == 3
    # Every attempt is the same event, re-signed.
    assert len({json.loads(r["body"])["delivery"] for r in target.requests}) == 1
    log = client_for(manager).get(
        f"/api/projects/{project.pk}/webhooks/{delivery.webhook_id}/deliveries/"
    )
    row = log.json()["results"][0]
    assert row["status"] == "succeeded" and row["attempts"] == 3 and row["response_code"] == 200


def test_receiver_that_always_fails_gives_up_after_bounded_attempts(
    project, crowd, allow_internal, eager, receiver
):
    target = receiver([500])
    retrain_with_hook(project, crowd, target.url)
    assert len(target.requests) == outbox.MAX_ATTEMPTS
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and delivery.attempts == outbox.MAX_ATTEMPTS
    assert delivery.error == "HTTP 500" and delivery.response_code == 500
    assert delivery.next_attempt_at is None


def test_backoff_is_exponential(settings):
    settings.TALLY_WEBHOOK_BACKOFF_SECONDS = 10
    assert [outbox.backoff_seconds(n) for n in (1, 2, 3, 4, 5)] == [10, 20, 40, 80, 160]


def test_redirects_are_not_followed(project, crowd, allow_internal, eager, receiver):
    elsewhere = receiver([200])
    target = receiver([302], headers={"Location": elsewhere.url})
    retrain_with_hook(project, crowd, target.url)
    assert elsewhere.requests == []
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and "redirects are not followed" in delivery.error


def test_unreachable_receiver_is_logged(project, crowd, allow_internal, eager):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    retrain_with_hook(project, crowd, f"http://127.0.0.1:{port}/closed")
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and "ConnectionRefusedError" in delivery.error


def test_internal_target_is_refused_again_at_delivery(project, crowd, settings, eager, receiver):
    """Saved while internal targets were allowed (or before a DNS answer changed): the check at
    delivery time refuses it and nothing is sent."""
    target = receiver([200])
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = True
    webhook_services.webhook_create(
        project=project, url=target.url.replace("127.0.0.1", "localhost")
    )
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = False
    answer_tasks(project, crowd, 60)
    tasks.retrain_and_push(project_id=project.pk, trigger="manual")
    assert target.requests == []
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and "internal address" in delivery.error


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
     "0.0.0.0", "224.0.0.1", "::1", "fe80::1", "fc00::1", "::ffff:127.0.0.1",  # noqa: S104
     "240.0.0.1"],
)  # fmt: skip
def test_internal_addresses_are_not_public(address):
    assert not transport._is_public(address)


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"])
def test_public_addresses(address):
    assert transport._is_public(address)


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


def test_overdue_delivery_is_requeued_by_the_sweep(project, crowd, allow_internal, receiver):
    """A delivery whose task never ran (broker down when it was due) is picked up by the sweep."""
    target = receiver([200])
    webhook_services.webhook_create(project=project, url=target.url, secret=SECRET)
    answer_tasks(project, crowd, 60)
    services.retrain_project(project_id=project.pk, trigger="manual")  # no push: task "lost"
    WebhookDelivery.objects.update(next_attempt_at=timezone.now() - timedelta(minutes=5))
    celery_app.conf.update(CELERY_TASK_ALWAYS_EAGER=True)
    try:
        result = tasks.retrain_sweep()
    finally:
        celery_app.conf.update(CELERY_TASK_ALWAYS_EAGER=False)
    assert len(result["redelivered"]) == 1
    assert WebhookDelivery.objects.get().status == "succeeded"
    assert len(target.requests) == 1


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
    assert transport._is_public(address)


def test_the_connected_address_is_checked_at_delivery(
    project, crowd, settings, eager, receiver, monkeypatch
):
    """Whatever the name resolved to when it was checked, a connection that reaches an internal
    address sends nothing (DNS rebinding, a resolver that answers differently the second time)."""
    target = receiver([200])
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = True
    webhook_services.webhook_create(project=project, url=target.url, secret=SECRET)
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = False
    # The pre-connection check passes (as if the name had resolved to a public address).
    monkeypatch.setattr(transport, "target_check", lambda url, **kwargs: ["127.0.0.1"])
    answer_tasks(project, crowd, 60)
    tasks.retrain_and_push(project_id=project.pk, trigger="manual")
    assert target.requests == []
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed"
    assert "connection reached an internal address" in delivery.error
    assert "TALLY_WEBHOOK_ALLOW_INTERNAL" in delivery.error
