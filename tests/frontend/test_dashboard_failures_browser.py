"""Retraining and webhook failures on the manager dashboard, in a real Chromium (issue 5).

Nothing of ours is mocked: webhooks are posted to a real HTTP receiver on 127.0.0.1 answering 500,
the retrain and the delivery task run in this process as a worker would run them (Celery eager,
no backoff, as in tests/learning/test_webhooks.py), and a retrain is made to fail the way
tests/learning/test_services.py does it: every answer comes from a flagged annotator.
"""

import pytest

from annotation.models import Membership
from delivery.models import Webhook, WebhookDelivery
from learning import services as learning_services
from learning.models import AnnotatorQuality, RetrainSchedule
from tests.frontend.conftest import DESKTOP, PHONE
from tests.support.crowd import answer_tasks
from tests.support.factories import UserFactory
from tests.support.learning import retrain_job
from tests.support.receivers import start_receiver

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("short_event_streams"),
]


@pytest.fixture
def failing_receiver():
    receiver = start_receiver([500])
    yield receiver
    receiver.close()


@pytest.fixture
def crowd(project):
    users = [UserFactory(username=f"crowd{i}") for i in range(2)]
    for user in users:
        Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    return users


def test_webhook_refused_then_added_and_its_failed_delivery_shown(
    new_context, manager, project, crowd, settings, eager, failing_receiver
):
    page = new_context(manager, **DESKTOP).new_page()
    page.goto(f"/projects/{project.pk}/")
    page.wait_for_selector("#hooks .empty")

    # Internal targets are refused by the API; its reason is shown.
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = False
    page.fill("#hook-url", failing_receiver.url)
    page.click("#hook-form button[type=submit]")
    page.wait_for_selector("#hook-error:not([hidden])")
    assert "internal address (127.0.0.1)" in page.inner_text("#hook-error")
    assert page.is_hidden("#new-secret")

    # Client-side checks of the secret's length.
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = True
    page.fill("#hook-secret", "short")
    page.click("#hook-form button[type=submit]")
    page.wait_for_selector("#hook-error:text('16 to 200 characters')")

    # Allowed: created; the secret is shown once. Markup in the URL stays text.
    url = failing_receiver.url + "&n=<img/src=x/onerror=alert(1)>"
    page.fill("#hook-url", url)
    page.fill("#hook-secret", "")
    page.click("#hook-form button[type=submit]")
    page.wait_for_selector("#new-secret:not([hidden])")
    assert "won't be shown again" in page.inner_text("#new-secret")
    secret = page.input_value("#new-secret-value")
    hook = Webhook.objects.get(project=project)
    assert secret == hook.secret and len(secret) >= 16
    assert hook.url == url
    page.wait_for_selector(f"#hooks li[data-hook='{hook.pk}']")
    assert page.inner_text(f"li[data-hook='{hook.pk}'] .hook-url") == url
    assert page.locator("#hooks img").count() == 0
    assert "No deliveries yet" in page.inner_text(f"li[data-hook='{hook.pk}']")
    assert page.is_hidden("#hook-error")
    page.click("#secret-done")
    assert page.is_hidden("#new-secret") and page.input_value("#new-secret-value") == ""

    # A retrain makes a new version; its delivery fails every attempt against the receiver.
    assert answer_tasks(project, crowd, 12 * len(crowd)) > 0
    retrain_job(project.pk)
    assert len(failing_receiver.requests) == 6
    delivery = WebhookDelivery.objects.get(webhook=hook)
    assert delivery.status == "failed" and delivery.response_code == 500

    # The open page learns of the new model from its event stream and shows the failure.
    item = f"li[data-hook='{hook.pk}']"
    page.wait_for_selector(f"{item}.bad .pill-failed", timeout=15_000)
    page.click(f"{item} .show-deliveries")
    row = f"#deliveries-{hook.pk} li.delivery.bad[data-delivery='{delivery.pk}']"
    page.wait_for_selector(row)
    text = page.inner_text(row)
    assert "failed" in text and "6 attempts" in text and "HTTP 500" in text
    assert "Last attempt" in text and "Created" in text
    assert page.get_attribute(f"{item} .show-deliveries", "aria-expanded") == "true"

    # Turn it off and on, then delete it (after confirming).
    page.click(f"{item} .toggle-active")
    page.wait_for_selector(f"{item} .pill-off")
    hook.refresh_from_db()
    assert hook.active is False
    page.click(f"{item} .toggle-active")
    page.wait_for_selector(f"{item} .pill-active")
    # The deliveries stay open across the refresh.
    page.wait_for_selector(row)
    page.once("dialog", lambda dialog: dialog.accept())
    page.click(f"{item} .delete-hook")
    page.wait_for_selector("#hooks .empty")
    assert not Webhook.objects.filter(pk=hook.pk).exists()


def test_failed_retrain_error_and_schedule_on_a_phone(new_context, manager, project, crowd):
    # The first retrain works; then every answer comes from a flagged annotator: nothing is left
    # to fit and the next retrain fails for real.
    answer_tasks(project, crowd, 8 * len(crowd))
    retrain_job(project.pk)
    answer_tasks(project, crowd, 4 * len(crowd))
    for user in crowd:
        AnnotatorQuality.objects.update_or_create(
            project=project, annotator=user, defaults={"flagged": True, "version_number": 1}
        )
    with pytest.raises(learning_services.RetrainError):
        learning_services.retrain_run(project_id=project.pk, trigger="manual")

    page = new_context(manager, **PHONE).new_page()
    page.goto(f"/projects/{project.pk}/")
    page.wait_for_selector("#last-error.error:not([hidden])")
    assert "The last retrain failed" in page.inner_text("#last-error")
    assert "No observations to fit" in page.inner_text("#last-error .error-text")
    assert page.locator("#last-error time").count() == 1
    assert "last retrain failed" in page.inner_text("#model-status")
    # Recent runs: the failed one first and highlighted with its error, then the one that worked.
    runs = page.locator("#runs tbody tr[data-run]")
    assert runs.count() == 2
    assert "failed" in runs.nth(0).inner_text() and "manual" in runs.nth(0).inner_text()
    assert "succeeded" in runs.nth(1).inner_text() and "v1" in runs.nth(1).inner_text()
    assert "No observations to fit" in page.inner_text("#runs tr.bad.detail")

    # The schedule: loaded, validated here, saved through the API.
    assert page.input_value("#sched-minutes") == "10"
    assert page.is_checked("#sched-enabled")
    page.fill("#sched-minutes", "0")
    page.tap("#schedule button[type=submit]")
    page.wait_for_selector("#sched-error:not([hidden])")
    assert "from 1 to 10080" in page.inner_text("#sched-error")
    assert page.get_attribute("#sched-minutes", "aria-invalid") == "true"
    page.fill("#sched-minutes", "90")
    page.tap("#sched-enabled")
    page.tap("#schedule button[type=submit]")
    page.wait_for_selector(".toast:text('automatic retraining is off')")
    assert page.is_hidden("#sched-error")
    schedule = RetrainSchedule.objects.get(project=project)
    assert (schedule.interval_minutes, schedule.enabled) == (90, False)

    # Usable at 360 px: nothing wider than the screen, touch targets at least 48 px high.
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    small = page.evaluate(
        """() => [...document.querySelectorAll(
            '.panel button, .panel input:not([type=checkbox]), .panel label.check')]
          .filter((n) => n.offsetParent !== null)
          .map((n) => [n.id || n.textContent.trim(), n.getBoundingClientRect().height])
          .filter(([, h]) => h < 48)"""
    )
    assert small == []
