"""Verification tasks on the phone, in a real Chromium (issue 15): the window's words with the
model's tags under them, a tag's guideline on tap, Yes in one tap, No and then the wrong word (or
Skip), and answers made offline sent once each when the connection is back."""

import pytest

from annotation import services
from annotation.models import Observation, Project, Sentence
from tests.frontend.conftest import PHONE
from tests.frontend.test_annotate_browser import shown_lease, wait_for_lookahead
from tests.frontend.test_annotate_phone_browser import no_more_tasks, outbox

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NAMES = ["NOUN", "VERB", "DET", "ADJ"]


@pytest.fixture
def verifying(project):
    """The project serves only verification tasks of version 1, showing each sentence's gold
    tags on its first three words."""
    windows = [
        services.VerificationWindow(sentence_id=s.pk, start=0, shown_tags=s.gold_tags[:3])
        for s in Sentence.objects.filter(project=project)
    ]
    services.verification_round_create(project_id=project.pk, version_number=1, windows=windows)
    Project.objects.filter(pk=project.pk).update(verification_share=1.0)
    return project


def test_yes_in_one_tap_and_no_with_the_wrong_word(new_context, verifying, annotator):
    page = new_context(annotator, **PHONE).new_page()
    page.goto(f"/annotate/{verifying.pk}/")
    lease = shown_lease(page)
    assert lease.task.kind == "verify"
    words = lease.task.sentence.tokens[:3]
    assert page.locator(".vw .word").all_inner_texts() == words
    assert page.locator(".vw .vtag").all_inner_texts() == [NAMES[k] for k in lease.task.shown_tags]
    assert page.inner_text("#q0-h") == "Are all of these tags right?"
    assert page.is_hidden("#submit") and page.is_visible("#answer-yes")
    # The Yes / No buttons are in thumb reach: in the dock, at the bottom of the screen.
    box = page.locator("#answer-yes").bounding_box()
    assert box["y"] + box["height"] > 640 - 120 and box["height"] >= 56
    # A tag's one-line guideline, on tap.
    page.tap(".vw[data-i='0']")
    tag = verifying.tags.get(position=lease.task.shown_tags[0])
    assert page.inner_text("#q0-guide").startswith(f"{tag.name}: {tag.guideline}")

    page.tap("#answer-yes")
    second = shown_lease(page)
    page.wait_for_function(
        f"() => document.querySelector('#task').dataset.assignment == '{second.pk}'"
    )
    assert second.pk != lease.pk
    page.tap("#answer-no")
    page.wait_for_selector("text=Which word is wrong?")
    assert page.is_visible("#answer-skip") and page.is_hidden("#answer-yes")
    page.tap(".vw[data-i='1']")
    page.wait_for_function(
        f"() => document.querySelector('#task').dataset.assignment != '{second.pk}'"
    )
    page.wait_for_selector("#pending", state="hidden")
    no_more_tasks(page)
    first_answer = Observation.objects.get(assignment=lease)
    assert first_answer.kind == "verify" and first_answer.answer is True
    assert first_answer.wrong is None and first_answer.shown_tags == lease.task.shown_tags
    assert first_answer.seconds_on_device is not None
    second_answer = Observation.objects.get(assignment=second)
    assert second_answer.answer is False and second_answer.wrong == 1
    assert second_answer.model_version == 1


def test_verification_answers_made_offline_are_stored_exactly_once(
    new_context, verifying, annotator
):
    context = new_context(annotator, **PHONE)
    page = context.new_page()
    bodies = []
    page.on(
        "request",
        lambda r: bodies.append(r.post_data) if r.url.endswith("/api/observations/") else None,
    )
    page.goto(f"/annotate/{verifying.pk}/")
    wait_for_lookahead(page, annotator, verifying)

    context.set_offline(True)
    expected = {}
    for i, (button, answer, wrong) in enumerate(
        [("#answer-yes", True, None), ("#answer-no", False, 2), ("#answer-no", False, None)]
    ):
        lease = shown_lease(page)
        assert lease.pk not in expected
        expected[lease.pk] = (answer, wrong)
        page.tap(button)
        if not answer:
            page.wait_for_selector("text=Which word is wrong?")
            page.tap("#answer-skip" if wrong is None else f".vw[data-i='{wrong}']")
        if i < 2:
            page.wait_for_function(
                f"() => document.querySelector('#task').dataset.assignment != '{lease.pk}'"
            )
    page.wait_for_selector("text=You are offline")
    assert Observation.objects.count() == 0
    kept = outbox(page, annotator)
    assert [item["answer"] for item in kept] == [True, False, False]
    assert all(item["kind"] == "verify" for item in kept)

    context.set_offline(False)
    page.wait_for_selector("#pending", state="hidden", timeout=15_000)
    no_more_tasks(page)
    stored = Observation.objects.filter(annotator=annotator)
    assert sorted(stored.values_list("assignment_id", flat=True)) == sorted(expected)
    for observation in stored:
        assert (observation.answer, observation.wrong) == expected[observation.assignment_id]
    assert stored.count() == 3  # once each, whatever was resent
    assert all('"kind"' not in (body or "") for body in bodies)  # kept on the device only


def test_the_dashboard_sets_the_task_mix_and_shows_seconds_per_kind(
    new_context, verifying, annotator, manager
):
    from annotation import scheduler

    verifying.refresh_from_db()
    lease = scheduler.task_lease_next(project=verifying, annotator=annotator, kind_draw=0.0)
    services.observation_submit(
        annotator=annotator,
        assignment_id=lease.assignment_id,
        idempotency_key="k-1",
        answer=True,
        seconds_on_device=1.25,
    )
    page = new_context(manager, **PHONE).new_page()
    page.goto(f"/projects/{verifying.pk}/")
    page.wait_for_selector("#kpis .kpi")
    assert "seconds per verification answer · 1 answers" in page.inner_text("#kpis")
    page.wait_for_function("() => document.getElementById('mix-share').value === '1'")
    page.fill("#mix-share", "2")
    page.click("#task-mix button[type=submit]")
    page.wait_for_selector("#mix-error:not([hidden])")
    assert Project.objects.get(pk=verifying.pk).verification_share == 1.0
    page.fill("#mix-share", "0.25")
    page.click("#task-mix button[type=submit]")
    page.wait_for_selector("#mix-error", state="hidden")
    page.wait_for_function(
        "() => document.querySelector('.toast') && document.querySelector('.toast').textContent"
        ".startsWith('Task mix saved')"
    )
    assert Project.objects.get(pk=verifying.pk).verification_share == 0.25
