"""A private project's phone page in a real Chromium (issue 13): the invitee reads what private
means before joining, each count is randomized in the browser with crypto.getRandomValues, and
no request body nor anything stored on the device holds the true count."""

import io
import json

import pytest

from annotation import services
from annotation.models import Observation
from tests.factories import UserFactory, make_project
from tests.frontend.conftest import PHONE, SENTENCES
from tests.frontend.test_annotate_browser import answer_by_taps, gold_counts, shown_lease

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
    project = make_project(
        owner=manager, name="Private pets", tags_per_task=1, redundancy=3, private=True, alpha=0.5
    )
    services.corpus_import(
        project=project, user=manager, file=io.BytesIO(
            "".join(json.dumps({"tokens": t, "tags": g}) + "\n" for t, g in SENTENCES).encode()
        ), filename="pets.jsonl", format="jsonl", max_bytes=10**6, seed=3,
    )  # fmt: skip
    return project


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
