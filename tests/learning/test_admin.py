"""The learning models in the Django admin: every changelist and a version's page load."""

import pytest

from delivery.webhooks import services as webhook_services
from learning import services
from tests.support.crowd import answer_tasks
from tests.support.factories import UserFactory
from tests.support.learning import retrain

pytestmark = pytest.mark.django_db


def test_admin_pages(client, project, crowd, settings):
    answer_tasks(project, crowd, 40)
    version = retrain(project).version
    settings.TALLY_WEBHOOK_ALLOW_INTERNAL = True
    hook = webhook_services.webhook_create(project=project, url="http://127.0.0.1:9/x")
    services.retrain_schedule_set(project=project, interval_minutes=5)
    admin = UserFactory(username="root", is_staff=True, is_superuser=True)
    client.force_login(admin)
    for name in (
        "learning/modelversion", "learning/annotatorquality", "learning/retrainrun",
        "learning/retrainlock", "learning/retrainschedule", "delivery/webhook",
        "delivery/webhookdelivery",
    ):  # fmt: skip
        assert client.get(f"/admin/{name}/").status_code == 200, name
    assert client.get(f"/admin/learning/modelversion/{version.pk}/change/").status_code == 200
    assert client.get(f"/admin/delivery/webhook/{hook.pk}/change/").status_code == 200
    assert client.get("/admin/learning/modelversion/add/").status_code == 403
