"""The manager's switch for annotators trying the model, on the dashboard in a real Chromium
(issue 44.2): off by default, saved as it changes, and an annotator's predict follows it."""

import pytest

from annotation.models import Project
from tests.frontend.conftest import DESKTOP
from tests.support.factories import client_for as api_client_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_manager_lets_annotators_try_the_model_and_takes_it_back(
    new_context, manager, annotator, project
):
    url = f"/api/projects/{project.pk}/predict/"
    other_words = {"text": "Purple elephants dance quietly."}
    assert api_client_for(annotator).post(url, other_words, format="json").status_code == 403
    page = new_context(manager, **DESKTOP).new_page()
    page.goto(f"/projects/{project.pk}/")
    box = page.locator("#may-predict")
    box.wait_for()
    assert not box.is_checked()
    box.check()
    page.wait_for_function("() => !document.getElementById('may-predict').disabled")
    page.wait_for_selector("text=Annotators may now try the model")
    project.refresh_from_db()
    assert project.annotators_may_predict
    # No model yet: the annotator now gets past the door and hears there is no model.
    answer = api_client_for(annotator).post(url, other_words, format="json")
    assert answer.status_code != 403, answer.json()
    page.reload()
    page.locator("#may-predict").wait_for()
    page.wait_for_function("() => document.getElementById('may-predict').checked")
    page.locator("#may-predict").uncheck()
    page.wait_for_selector("text=Only managers may try the model now")
    assert not Project.objects.get(pk=project.pk).annotators_may_predict
    assert api_client_for(annotator).post(url, other_words, format="json").status_code == 403
