"""The manager dashboard in a real Chromium: a project made by uploading a CoNLL-U file, answers
from simulated annotators, a retrain, and the open page showing the new report without a reload.

The corpus slice comes from UD English EWT (Universal Dependencies English Web Treebank,
© its authors, CC BY-SA 4.0; see data/README.md).
"""

import re

import pytest

from annotation.models import Membership, Project
from tests.frontend.conftest import DESKTOP
from tests.support.crowd import answer_tasks
from tests.support.ewt import ewt_file
from tests.support.factories import UserFactory
from tests.support.learning import retrain_job

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("short_event_streams"),
    pytest.mark.usefixtures("tokenizer_loaded"),  # "try the model" cuts text with spaCy
]


def test_manager_creates_project_from_conllu_and_sees_new_report_live(
    new_context, tmp_path, manager
):
    corpus = ewt_file(tmp_path / "ewt-slice.conllu", 120)
    page = new_context(manager, **DESKTOP).new_page()
    page.goto("/projects/new/")
    page.fill("#name", "EWT <slice>")
    page.set_input_files("#file", str(corpus))
    assert page.is_checked("input[name=format][value=conllu]")
    assert page.is_checked("input[name=preset][value=ud_upos]")
    assert page.locator("#tag-preview li").count() == 17
    page.fill("#window_size", "4")
    page.fill("#tags_per_task", "")  # all tags
    page.fill("#redundancy", "1")
    page.fill("#evaluation_fraction", "0.25")
    page.fill("#gold_check_fraction", "0")
    page.fill("#gold_fraction", "0")
    page.click("#create")
    page.wait_for_url(re.compile(r"/projects/\d+/$"))

    project = Project.objects.get(name="EWT <slice>")
    assert page.url.endswith(f"/projects/{project.pk}/")
    assert project.window_size == 4 and project.tags_per_task is None
    assert project.tags.count() == 17
    assert project.sentences.count() == 120
    assert project.sentences.filter(split="evaluation").exists()
    page.wait_for_selector("#kpis .kpi")
    assert "120" in page.inner_text("#kpis")
    assert page.input_value("#invite-code") == project.invite_code
    assert page.title() == "EWT <slice> · Tally"  # escaped in the page, shown as text

    annotators = [UserFactory(username=f"sim{i}") for i in range(2)]
    for user in annotators:
        Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    assert answer_tasks(project, annotators, 120) == 120

    page.wait_for_selector("#live.on", timeout=15_000)
    page.evaluate("window.__notReloaded = true")
    assert "No model yet" in page.inner_text("#curve")

    retrain_job(project.pk)

    page.wait_for_selector("#curve svg", timeout=20_000)
    page.wait_for_selector("#f1 table")
    page.wait_for_selector("#confusion table.heat")
    page.wait_for_selector("#versions table")
    # The versions table and the confusion matrix fit their columns: nothing, the Download link
    # least, is scrolled out.
    for wrap in ("versions", "confusion"):
        box = f"document.getElementById('{wrap}')"
        assert page.evaluate(f"{box}.scrollWidth <= {box}.clientWidth"), wrap
    assert page.locator("#versions a", has_text="Download").is_visible()
    assert page.evaluate("window.__notReloaded === true")
    page.wait_for_selector("#model-status:text-matches('^Model v1')")
    assert page.locator("#f1 tbody tr").count() >= 5
    assert "sim0" in page.inner_text("#annotators")

    page.click("#pause")
    page.wait_for_selector("#p-status.pill-paused")
    assert Project.objects.get(pk=project.pk).status == "paused"
    page.click("#pause")
    page.wait_for_selector("#p-status.pill-active")
    assert Project.objects.get(pk=project.pk).status == "active"

    page.fill("#try-text", "The old dog barked .")
    page.click("#try button")
    page.wait_for_selector("#try-out .predicted li")
    assert page.locator("#try-out .predicted li").count() == 5
