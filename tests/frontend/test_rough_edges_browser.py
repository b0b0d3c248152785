"""The smaller rough edges a new user hit (issue 26, item 8), at 360 × 640 in a real Chromium,
checked on element boxes and computed styles."""

import pytest

from tests.frontend.conftest import PHONE
from tests.frontend.test_annotate_browser import shown_lease
from tests.frontend.test_annotate_phone_browser import EMOJI, no_more_tasks

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_private_checkbox_sits_beside_its_label(new_context, manager):
    page = new_context(manager, **PHONE).new_page()
    page.goto("/projects/new/")
    box = page.locator("#private").bounding_box()
    label = page.locator("label:has(#private)")
    text = label.evaluate(
        "l => { const r = document.createRange(); r.setStartAfter(l.querySelector('input'));"
        " r.setEndAfter(l.lastChild); const b = r.getBoundingClientRect();"
        " return {x: b.x, y: b.y, height: b.height}; }"
    )
    assert box["width"] <= 32 and box["height"] <= 32, box  # a checkbox, not a full-width box
    assert text["x"] >= box["x"] + box["width"]  # the label's words to its right
    assert text["y"] < box["y"] + box["height"]  # on its row, not below it


def test_the_dock_is_opaque_and_the_private_lock_is_drawn(new_context, manager):
    from tests.frontend.test_private_browser import private as private_project
    from tests.support.factories import member

    project = private_project.__wrapped__(manager)
    annotator = member(project, username="annotator")
    page = new_context(annotator, **PHONE).new_page()
    page.goto(f"/annotate/{project.pk}/")
    shown_lease(page)
    no_more_tasks(page)
    alpha = page.evaluate(
        "(() => { const c = getComputedStyle(document.querySelector('.dock')).backgroundColor;"
        " const v = c.match(/[\\d.]+/g).map(Number); return v.length > 3 ? v[3] : 1; })()"
    )
    assert alpha == 1
    lock = page.locator(".title .private svg")
    assert lock.is_visible()
    box = lock.bounding_box()
    assert 12 <= box["width"] <= 24 and 12 <= box["height"] <= 24
    assert page.get_attribute(".title .private", "aria-label") == "Private project"
    assert page.evaluate(EMOJI) == []  # no glyph that needs an emoji font


def test_the_sign_in_page_takes_an_invite_code(new_context, project):
    page = new_context(**PHONE).new_page()
    page.goto("/login/")
    code = page.locator("#invite-box #join-code")
    box = code.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 360 and box["height"] >= 48
    code.fill(project.invite_code)
    page.click("#invite-box button")
    page.wait_for_url(f"**/join/{project.invite_code}")
    assert page.inner_text("#join-project") == project.name


def test_one_check_is_one_check(new_context, project, manager):
    from annotation.models import Sentence

    first = Sentence.objects.filter(project=project).order_by("position").first()
    Sentence.objects.filter(project=project).update(split="train")
    Sentence.objects.filter(pk=first.pk).update(split="gold_check")
    page = new_context(manager, **PHONE).new_page()
    page.goto(f"/projects/{project.pk}/")
    page.locator("#imports li").first.wait_for()
    text = page.inner_text("#imports")
    assert "1 check)" in text and "1 checks" not in text
