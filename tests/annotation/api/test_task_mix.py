"""The task mix through the API (issue 25): automatic (null) for a new project, a fixed share
the manager types, and clear 400s for anything else."""

import pytest

from annotation.models import Project
from tests.support.factories import TAGS, client_for

pytestmark = pytest.mark.django_db


def test_a_new_project_is_automatic_and_the_manager_may_fix_a_share_or_go_back(manager):
    client = client_for(manager)
    created = client.post(
        "/api/projects/", {"name": "Mix", "tags": TAGS, "window_size": 3}, format="json"
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["task_mix"], body["verification_share"]) == ("auto", None)
    assert body["verification_share_auto"] == 0.0
    url = f"/api/projects/{body['id']}/"

    fixed = client.patch(url, {"verification_share": 0.3}, format="json").json()
    assert (fixed["task_mix"], fixed["verification_share"]) == ("fixed", 0.3)
    automatic = client.patch(url, {"verification_share": None}, format="json").json()
    assert (automatic["task_mix"], automatic["verification_share"]) == ("auto", None)
    assert Project.objects.get(pk=body["id"]).verification_share is None


@pytest.mark.parametrize(
    ("bad", "says"),
    [(1.5, "from 0"), (-0.1, "from 0"), ("half", "A number"), (True, "A number")],
)
def test_a_share_outside_0_to_1_is_a_400_that_says_what_is_allowed(manager, bad, says):
    client = client_for(manager)
    created = client.post(
        "/api/projects/", {"name": "Mix", "tags": TAGS, "verification_share": 0.2}, format="json"
    ).json()
    response = client.patch(
        f"/api/projects/{created['id']}/", {"verification_share": bad}, format="json"
    )
    assert response.status_code == 400
    (message,) = response.json()["error"]["fields"]["verification_share"]
    assert says in message
    assert Project.objects.get(pk=created["id"]).verification_share == 0.2
