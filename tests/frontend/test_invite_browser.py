"""Invite links in a real Chromium on a phone (issue 26, item 4): the code is checked before
anyone signs up, the page names the project, and a refused password keeps the invite."""

import pytest
from django.contrib.auth import get_user_model

from annotation import services
from annotation.models import Membership
from tests.frontend.conftest import PASSWORD, PHONE
from tests.frontend.test_annotate_phone_browser import no_more_tasks

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_rotated_invite_link_says_so_before_sign_up(new_context, project):
    old_code = project.invite_code
    services.project_rotate_invite(project=project)
    page = new_context(**PHONE).new_page()
    response = page.goto(f"/join/{old_code}")
    assert response.status == 404
    assert page.inner_text("h1") == "This invite link is not valid"
    assert "Ask the project's manager for a new link" in page.inner_text("#join-invalid")
    assert page.locator("input[type=password]").count() == 0  # nothing to sign up for
    assert project.name not in page.content()


def test_the_invite_page_names_the_project_and_a_short_password_keeps_the_invite(
    new_context, project
):
    page = new_context(**PHONE).new_page()
    page.goto(f"/join/{project.invite_code}")
    assert page.inner_text("#join-project") == project.name  # "Pets & <b>things</b>", as text
    page.fill("#su_username", "newcomer")
    page.fill("#su_password", "short")
    page.tap("text=Create account and join")
    page.wait_for_selector(".error")
    # Still the invite page, with the project, the name typed and what was wrong.
    assert page.url.endswith(f"/join/{project.invite_code}")
    assert page.inner_text("#join-project") == project.name
    assert page.input_value("#su_username") == "newcomer"
    assert "too short" in page.inner_text(".error").lower()
    assert not get_user_model().objects.filter(username="newcomer").exists()

    page.fill("#su_password", PASSWORD)
    no_more_tasks(page)
    page.tap("text=Create account and join")
    page.wait_for_url(f"**/annotate/{project.pk}/")
    user = get_user_model().objects.get(username="newcomer")
    assert Membership.objects.get(project=project, user=user).role == "annotator"
