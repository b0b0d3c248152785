"""Screenshots of the annotator page and the dashboard at phone (360×640) and desktop (1280×800)
sizes, with a real project: an EWT slice, simulated annotators (one careless), three retrains.

    TALLY_SCREENSHOTS=1 .venv/bin/pytest tests/frontend/test_screenshots.py

writes them to docs/screenshots/ (the README shows them); without it they go to a temporary
directory, so the suite still checks that both pages render at both sizes.
"""

import os
import random
import re
from pathlib import Path

import pytest

from annotation import services
from annotation.models import Membership, Project
from devtools.seeding import conllu_import
from tests.frontend.conftest import DESKTOP, PHONE
from tests.support.crowd import answer_tasks
from tests.support.ewt import ewt_file
from tests.support.factories import UserFactory
from tests.support.learning import retrain_job

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("short_event_streams"),
]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def crowd_project(manager, corpus: Path, *, name: str, crowd: list, rounds) -> Project:
    """A project of `corpus` (a fifth held out for evaluation), every UPOS tag asked, answered
    in rounds by exact annotators (`crowd`, `rounds[i]` answers each) and a careless one, zed,
    25 a round; retrained after each round."""
    rng = random.Random(7)
    project = services.project_create(
        owner=manager, name=name, tag_preset="ud_upos", tags_per_task=None, redundancy=1
    )
    conllu_import(project, manager, corpus, evaluation_fraction=0.2, seed=1)
    careless = UserFactory(username="zed")
    for user in [*crowd, careless]:
        Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    for per_annotator in rounds:
        answer_tasks(project, crowd, per_annotator * len(crowd))
        answer_tasks(project, [careless], 25, spammers={careless}, seed=rng.getrandbits(32))
        retrain_job(project.pk)
    return project


def test_screenshots(new_context, tmp_path, manager):
    out = DOCS if os.environ.get("TALLY_SCREENSHOTS") == "1" else tmp_path
    out.mkdir(parents=True, exist_ok=True)
    corpus = ewt_file(tmp_path / "en_ewt-train-300.conllu", 300)
    crowd = [UserFactory(username=name) for name in ["ana", "bo", "chen", "dev"]]
    project = crowd_project(
        manager, corpus, name="EWT part of speech", crowd=crowd, rounds=(15, 30, 60)
    )

    # The dashboard, open while a new answer round and retrain arrive.
    for size, options in (("desktop", DESKTOP), ("phone", {**PHONE, "device_scale_factor": 2})):
        page = new_context(manager, **options).new_page()
        page.goto(f"/projects/{project.pk}/")
        page.wait_for_selector("#curve svg")
        page.wait_for_selector("#live.on", timeout=15_000)
        page.screenshot(path=out / f"dashboard-{size}.png")
        if size == "desktop":
            page.screenshot(path=out / "dashboard-desktop-full.png", full_page=True)

    # The annotator page, on a task of the UPOS project with two tags asked.
    two_tags = services.project_create(
        owner=manager, name="EWT part of speech · 2 tags", tag_preset="ud_upos", tags_per_task=2
    )
    conllu_import(two_tags, manager, corpus, seed=5)
    annotator = crowd[0]
    Membership.objects.create(project=two_tags, user=annotator, role=Membership.Role.ANNOTATOR)
    answer_tasks(two_tags, [annotator], 12)
    for size, options in (("phone", {**PHONE, "device_scale_factor": 2}), ("desktop", DESKTOP)):
        page = new_context(annotator, **options).new_page()
        page.goto(f"/annotate/{two_tags.pk}/")
        page.wait_for_selector("#task:not([hidden])")
        page.wait_for_function("() => document.getElementById('today').textContent !== '–'")
        page.tap("#q0 .inc") if size == "phone" else page.click("#q0 .inc")
        page.evaluate("document.activeElement.blur()")
        page.mouse.move(0, 0)
        page.screenshot(path=out / f"annotate-{size}.png")
        assert page.evaluate("document.documentElement.scrollWidth") <= options["viewport"]["width"]

    shots = sorted(p.name for p in out.glob("*.png"))
    assert {"annotate-phone.png", "annotate-desktop.png"} <= set(shots)
    assert {"dashboard-phone.png", "dashboard-desktop.png"} <= set(shots)
    assert all(re.fullmatch(r"[a-z-]+\.png", name) for name in shots)
