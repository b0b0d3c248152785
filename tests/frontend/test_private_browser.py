"""A private project's phone page in a real Chromium (issue 13): the invitee reads what private
means before joining, each count is randomized in the browser with crypto.getRandomValues, and
no request body nor anything stored on the device holds the true count."""

import json

import pytest

from annotation.models import DEFAULT_MECHANISM, Observation, Project
from tests.frontend.conftest import PHONE, pets_project
from tests.frontend.test_annotate_browser import answer_by_taps, gold_counts, shown_lease
from tests.support.factories import UserFactory, member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Counts the page's cryptographic draws, and keeps every value localStorage is given.
WATCH = """
window.__draws = 0;
window.__stored = [];
const draw = crypto.getRandomValues.bind(crypto);
crypto.getRandomValues = (array) => { window.__draws += 1; return draw(array); };
const setItem = Storage.prototype.setItem;
Storage.prototype.setItem = function (key, value) {
  window.__stored.push(String(value));
  return setItem.call(this, key, value);
};
"""


@pytest.fixture
def private(manager):
    # A low level (α = 0.5 for one tag, window 3): a release equals the true count about one
    # time in three, so a run of answers that all came back true would be the true counts sent.
    return pets_project(
        manager, name="Private pets", tags_per_task=1, redundancy=3, private=True, alpha=0.5
    )


def test_the_true_count_never_leaves_the_page(new_context, private):
    user = UserFactory(username="phone")
    page = new_context(user, **PHONE).new_page()
    page.add_init_script(WATCH)
    bodies = []
    page.on(
        "request",
        lambda r: (
            bodies.append(r.post_data)
            if r.method == "POST" and r.url.endswith("/api/observations/")
            else None
        ),
    )
    page.goto(f"/join/{private.invite_code}")
    assert "This project is private" in page.inner_text("#private-note")
    assert "scrambles every count" in page.inner_text("#private-note")
    page.tap("#join-go")  # joining waits for the tap: the note is read first
    page.wait_for_url(f"**/annotate/{private.pk}/")
    truths = []
    for _ in range(10):
        lease = shown_lease(page)
        truth = gold_counts(lease)
        truths.append((lease.pk, truth))
        answer_by_taps(page, truth)
        page.wait_for_function(
            "previous => document.getElementById('task').dataset.assignment !== String(previous)",
            arg=lease.pk,
        )
    for _ in range(50):
        if Observation.objects.filter(project=private).count() == 10:
            break
        page.wait_for_timeout(100)
    stored = {o.assignment_id: o for o in Observation.objects.filter(project=private)}
    assert len(stored) == 10

    # Every body sent holds released values and the project's mechanism, never `counts`.
    sent = [json.loads(body) for body in bodies]
    assert len({b["assignment"] for b in sent}) == 10
    for body in sent:
        assert "counts" not in body, body
        assert len(body["released"]) == 1  # one tag asked per task
        assert body["privacy"] == {"mechanism": private.mechanism, "alpha": 0.5}
    # What the server stored is what was released, not the truth the taps gave.
    released = {b["assignment"]: b["released"] for b in sent}
    differ = 0
    for assignment, truth in truths:
        assert released[assignment] == dict(zip(truth, stored[assignment].counts, strict=True))
        differ += released[assignment] != truth
    assert differ >= 2, (truths, released)  # sent as tapped, this would be 0
    # The page drew its randomness from the browser's cryptographic generator.
    assert page.evaluate("window.__draws") >= 10
    # Nothing the page stored held a true count: only released values went to the outbox.
    for value in page.evaluate("window.__stored"):
        assert '"counts"' not in value, value
    queued = [v for v in page.evaluate("window.__stored") if '"released"' in v]
    assert queued, "the outbox kept the answers before sending them"
    page.close()


# The phone's own checks (issue 24) -------------------------------------------------------------


def _privacy_module(page) -> str:
    """The URL the page loaded privacy.js from (hashed in production)."""
    return page.get_attribute('link[rel="modulepreload"][href*="annotate/privacy"]', "href")


def test_the_phone_accepts_every_release_the_server_defines(new_context, private):
    """The page's check against the server's own definition (learning/core/privacy.py): every
    mechanism, levels up to the cap, windows of 1 to 12 words, 1 to 3 tags asked."""
    from annotation.api.serializers import privacy_out
    from learning.core.privacy import MAX_ALPHA, MECHANISMS, Mechanism

    page = new_context(member(private, username="phone"), **PHONE).new_page()
    page.goto(f"/annotate/{private.pk}/")
    page.wait_for_selector("#task:not([hidden])")
    tasks = [
        {
            "kind": "count",
            "window": {"start": 0, "length": window},
            "tags": [{"name": f"T{i}"} for i in range(asked)],
            "privacy": privacy_out(Mechanism(name, alpha, n_tags=17), window=window, n_asked=asked),
        }
        for name in MECHANISMS
        for alpha in (0.1, 0.5, 1.0, 3.0, 5.5, MAX_ALPHA)
        for window in (1, 2, 5, 12)
        for asked in (1, 2, 3)
    ]
    problems = page.evaluate(
        "async ([url, tasks]) => { const m = await import(url);"
        " return tasks.map((t) => m.releaseProblem(t)); }",
        [_privacy_module(page), tasks],
    )
    assert problems == [None] * len(tasks)


@pytest.mark.parametrize("tamper", ["identity", "level above the cap", "budget not split"])
def test_a_release_that_gives_the_count_away_is_never_answered(new_context, private, tamper):
    """A server (or anything between it and the phone) that turns the release into the
    identity, or any release beyond what α promises, gets no answer: the page shows no task
    and sends nothing."""
    from learning.core.privacy import Mechanism

    page = new_context(member(private, username="phone"), **PHONE).new_page()
    bodies = []
    page.on(
        "request",
        lambda r: bodies.append(r.url) if r.url.endswith("/api/observations/") else None,
    )

    def bent(route):
        task = route.fetch().json()
        if task:
            size = task["window"]["length"] + 1
            privacy = task["privacy"]
            if tamper == "identity":
                privacy["release"] = [[float(o == n) for o in range(size)] for n in range(size)]
            elif tamper == "level above the cap":
                channel = Mechanism(privacy["mechanism"], 20.0, 4).channel(size - 1, 1)
                privacy |= {"alpha": 20.0, "release": channel.T.tolist()}
            else:  # the whole α for one tag where two are asked: more than α promises
                channel = Mechanism(privacy["mechanism"], privacy["alpha"], 4).channel(size - 1, 1)
                task["tags"] = task["tags"] * 2
                privacy["release"] = channel.T.tolist()
        route.fulfill(json=task)

    page.route("**/tasks/next/", bent)
    page.goto(f"/annotate/{private.pk}/")
    page.wait_for_selector("text=This task was not shown")
    assert "cannot be answered privately" in page.inner_text("#state")
    assert page.is_hidden("#task")
    page.wait_for_timeout(500)
    assert bodies == [] and not Observation.objects.filter(project=private).exists()


def test_answers_from_before_the_switch_to_private_are_never_sent(new_context, manager):
    """Answers given offline in a project that then becomes private hold true counts: the page
    deletes them unsent, says so, and goes on with private tasks, whose answers are released.
    The service refuses that switch once a task is out (test_concurrency); the switch here is
    made on the project's row, to test the phone's own guard."""
    project = pets_project(manager, name="Soon private", tags_per_task=1, redundancy=3)
    user = member(project, username="phone")
    context = new_context(user, **PHONE)
    page = context.new_page()
    page.goto(f"/annotate/{project.pk}/")
    page.wait_for_selector("#task:not([hidden])")
    context.set_offline(True)
    for _ in range(2):
        lease = shown_lease(page)
        answer_by_taps(page, gold_counts(lease))
    page.wait_for_selector("text=Offline · 2 answers waiting to be sent")
    page.close()  # the two true counts wait on the device
    Project.objects.filter(pk=project.pk).update(
        private=True, alpha=1.0, mechanism=DEFAULT_MECHANISM
    )

    context.set_offline(False)
    bodies = []
    page = context.new_page()
    page.on(
        "request",
        lambda r: (
            bodies.append(json.loads(r.post_data))
            if r.method == "POST" and r.url.endswith("/api/observations/")
            else None
        ),
    )
    page.goto(f"/annotate/{project.pk}/")
    page.wait_for_selector("text=2 answers given before the change were deleted")
    assert page.evaluate(f"localStorage.getItem('tally.outbox.{user.pk}')") == "[]"
    lease = shown_lease(page)
    answer_by_taps(page, gold_counts(lease))
    for _ in range(50):
        if bodies:
            break
        page.wait_for_timeout(100)
    assert len(bodies) == 1 and "counts" not in bodies[0], bodies
    assert bodies[0]["privacy"] == {"mechanism": "krr", "alpha": 1.0}
    page.wait_for_selector("#pending", state="hidden")
    for _ in range(50):
        if Observation.objects.filter(project=project).exists():
            break
        page.wait_for_timeout(100)
    stored = list(Observation.objects.filter(project=project).values("id", "mechanism", "counts"))
    assert stored and all(o["mechanism"] == "krr" for o in stored), stored  # no true count
