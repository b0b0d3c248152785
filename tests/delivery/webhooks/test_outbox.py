"""Deliveries against real local HTTP receivers: signature, retries with backoff, the delivery log,
redirects not followed, internal targets refused at delivery, lost deliveries requeued."""

import hashlib
import hmac
import json
import socket
from datetime import timedelta

import pytest
from django.utils import timezone

from config.celery import app as celery_app
from delivery.models import WebhookDelivery
from delivery.webhooks import outbox, transport
from delivery.webhooks import services as webhook_services
from learning import tasks
from tests.support.crowd import answer_tasks
from tests.support.factories import client_for
from tests.support.learning import retrain

pytestmark = pytest.mark.django_db
SECRET = "a-shared-secret-of-some-length"


def answer_and_push(project, crowd):
    """60 exact answers by `crowd`, then a retrain and its push (its webhook deliveries)."""
    answer_tasks(project, crowd, 60)
    return tasks.retrain_and_push(project_id=project.pk, trigger="manual")


def retrain_with_hook(project, crowd, url):
    webhook_services.webhook_create(project=project, url=url, secret=SECRET)
    return answer_and_push(project, crowd)


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
    answer_and_push(project, crowd)
    assert target.requests == []
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and "internal address" in delivery.error


def test_overdue_delivery_is_requeued_by_the_sweep(project, crowd, allow_internal, receiver):
    """A delivery whose task never ran (broker down when it was due) is picked up by the sweep."""
    target = receiver([200])
    webhook_services.webhook_create(project=project, url=target.url, secret=SECRET)
    answer_tasks(project, crowd, 60)
    retrain(project)  # no push: task "lost"
    WebhookDelivery.objects.update(next_attempt_at=timezone.now() - timedelta(minutes=5))
    celery_app.conf.update(CELERY_TASK_ALWAYS_EAGER=True)
    try:
        result = tasks.retrain_sweep()
    finally:
        celery_app.conf.update(CELERY_TASK_ALWAYS_EAGER=False)
    assert len(result["redelivered"]) == 1
    assert WebhookDelivery.objects.get().status == "succeeded"
    assert len(target.requests) == 1


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
    answer_and_push(project, crowd)
    assert target.requests == []
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed"
    assert "connection reached an internal address" in delivery.error
    assert "TALLY_WEBHOOK_ALLOW_INTERNAL" in delivery.error
