"""The Django admin works for every annotation model and escapes imported text."""

import io

import pytest
from django.apps import apps
from django.urls import reverse

from annotation import scheduler, services
from tests.support.factories import UserFactory


@pytest.fixture
def admin_client(client, db):
    admin = UserFactory(username="admin", is_staff=True, is_superuser=True)
    client.force_login(admin)
    return client


def test_every_model_has_a_working_admin(admin_client, project, corpus, annotator):
    lease = scheduler.task_lease_next(project=project, annotator=annotator)
    services.observation_submit(
        annotator=annotator,
        assignment_id=lease.assignment_id,
        counts={["NOUN", "VERB", "DET", "ADJ"][i]: 0 for i in lease.tags},
        idempotency_key="k",
    )
    services.corpus_upload(  # an import job's row too
        project=project,
        user=project.owner,
        file=io.BytesIO(b"one more sentence\n"),
        format="tokenized",
        max_bytes=1000,
    )
    for model in apps.get_app_config("annotation").get_models():
        name = model._meta.model_name
        changelist = admin_client.get(reverse(f"admin:annotation_{name}_changelist"))
        assert changelist.status_code == 200, name
        obj = model.objects.first()
        change = admin_client.get(reverse(f"admin:annotation_{name}_change", args=[obj.pk]))
        assert change.status_code == 200, name


def test_imported_text_is_escaped_in_the_admin(admin_client, project, manager):
    services.corpus_import(
        project=project,
        user=manager,
        file=io.BytesIO(b"<script>alert(1)</script> hi\n"),
        format="tokenized",
        max_bytes=1000,
    )
    page = admin_client.get(reverse("admin:annotation_sentence_changelist")).content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
