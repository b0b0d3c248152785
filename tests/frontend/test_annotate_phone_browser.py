"""The annotator page on a 360 × 640 phone, in a real Chromium: no question is answered unseen,
the state screens show no empty button, no glyph needs an emoji font, and the footer follows the
answers given (issue 16, item 11; issue 17, "Dashboard on a phone")."""

import io
import json

import pytest

from annotation import services
from annotation.models import MAX_TAGS, Membership, Observation, Task
from learning.core.conllu import iter_conllu
from tests.frontend.conftest import PHONE
from tests.frontend.test_annotate_browser import shown_lease, wait_for_lookahead
from tests.support.ewt import ewt_slice
from tests.support.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DEMO_SENTENCES = 3000  # the demo project is made from the first 3000 sentences of EWT's train split

# Indices of the questions whose whole box is on screen: below the top bar, above the dock.
ON_SCREEN = """() => {
  const top = document.querySelector('.bar').getBoundingClientRect().bottom;
  const dock = document.querySelector('.dock').getBoundingClientRect().top;
  const bottom = Math.min(window.innerHeight, dock);
  return [...document.querySelectorAll('#questions .q')].flatMap((q, i) => {
    const r = q.getBoundingClientRect();
    return r.top >= top - 0.5 && r.bottom <= bottom + 0.5 ? [i] : [];
  });
}"""


def longest_demo_sentence() -> list[str]:
    """The demo corpus' longest sentence, by the characters it shows."""
    sentences = iter_conllu(io.StringIO(ewt_slice(DEMO_SENTENCES)))
    return max((s.tokens for s in sentences), key=lambda tokens: len(" ".join(tokens)))


def one_task_project(manager, *, tags, asked, window=5):
    """A project of one sentence, the demo's longest, whose one task asks `asked` (tag indices)
    about the window in the middle of the sentence: the most context on both sides."""
    tokens = longest_demo_sentence()
    project = services.project_create(
        owner=manager, name="Long sentence", tags=tags, window_size=window, redundancy=1
    )
    services.corpus_import(
        project=project,
        user=manager,
        file=io.BytesIO(json.dumps({"tokens": tokens}).encode() + b"\n"),
        filename="long.jsonl",
        format="jsonl",
        max_bytes=10**6,
        seed=0,
    )
    assert Task.objects.filter(project=project).count() == 1
    Task.objects.filter(project=project).update(start=(len(tokens) - window) // 2, tags=asked)
    user = UserFactory(username="phone")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    return project, user, tokens


def outbox(page, user) -> list:
    return json.loads(page.evaluate(f"localStorage.getItem('tally.outbox.{user.pk}')") or "[]")


def no_more_tasks(page) -> None:
    """From now on the server has no task for the page: nothing is left running on the server
    when the test ends (a lease in flight can deadlock the database's flush)."""
    page.route("**/tasks/next/", lambda route: route.fulfill(status=204))


def submit_says(page, label: str) -> None:
    """Waits for Submit's label: the page checks what is on screen a frame after layout, which on
    a loaded machine comes after the test's next read."""
    page.wait_for_function(
        "label => document.getElementById('submit').textContent === label", arg=label
    )


def test_every_question_is_reached_before_submit_takes_the_answer(new_context, manager):
    """The most tags a project may ask (all of MAX_TAGS), on the longest sentence: Submit first
    brings each unseen question on screen, and takes the answer only once all have been."""
    tags = [
        {"name": f"T{i:03d}", "guideline": "A tag of this test; one line of guideline.",
         "examples": ["word"]}
        for i in range(MAX_TAGS)
    ]  # fmt: skip
    project, user, _ = one_task_project(manager, tags=tags, asked=list(range(MAX_TAGS)))
    page = new_context(user, **PHONE).new_page()
    page.goto(f"/annotate/{project.pk}/")
    lease = shown_lease(page)
    wait_for_lookahead(page, user, project)
    no_more_tasks(page)
    assert page.locator("#questions .q").count() == MAX_TAGS

    reached = set(page.evaluate(ON_SCREEN))
    assert len(reached) < MAX_TAGS
    for _ in range(MAX_TAGS):
        page.tap("#submit")
        # Not taken: the same task is on screen and nothing was saved to be sent.
        assert page.get_attribute("#task", "data-assignment") == str(lease.pk)
        assert outbox(page, user) == []
        reached |= set(page.evaluate(ON_SCREEN))
        if len(reached) == MAX_TAGS:
            break
        assert page.inner_text("#submit") != "Submit"  # it says what a tap will do
    assert reached == set(range(MAX_TAGS))
    assert page.inner_text("#submit") == "Submit"

    page.tap(f"#q{MAX_TAGS - 1} .inc")
    page.tap("#submit")
    page.wait_for_function("() => document.getElementById('today').textContent === '1'")
    stored = Observation.objects.get(assignment=lease)
    assert stored.counts == [0] * (MAX_TAGS - 1) + [1]
    assert Observation.objects.count() == 1


def test_two_questions_fit_beside_the_longest_sentence(new_context, manager):
    """The demo's setting (two UPOS tags a task), its longest sentence, the two tags with the
    longest guidelines: the sentence shows the window with a few words around it, so both
    counters are on screen at once; a tap shows the whole sentence."""
    from annotation.tagsets import PRESETS

    upos = PRESETS["ud_upos"]
    longest = sorted(range(len(upos)), key=lambda i: -len(upos[i]["guideline"]))[:2]
    project, user, tokens = one_task_project(manager, tags=upos, asked=sorted(longest))
    page = new_context(user, **PHONE).new_page()
    page.goto(f"/annotate/{project.pk}/")
    shown_lease(page)
    wait_for_lookahead(page, user, project)
    assert page.evaluate(ON_SCREEN) == [0, 1]
    submit_says(page, "Submit")
    assert " ".join(tokens[:3]) not in page.inner_text("#sentence")

    page.tap("#sentence .more-words")
    page.wait_for_function(
        "text => document.getElementById('sentence').textContent.includes(text)",
        arg=" ".join(tokens[:3]),
    )
    assert " ".join(tokens[-3:]) in page.inner_text("#sentence")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360


# Every character the page shows (text and ::before/::after content) that a system without an
# emoji font draws as a missing-glyph box.
EMOJI = r"""() => {
  const emoji = /\p{Emoji_Presentation}/u;
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (emoji.test(node.data)) found.push(node.data);
  }
  for (const node of document.body.querySelectorAll('*')) {
    for (const pseudo of ['::before', '::after']) {
      const content = getComputedStyle(node, pseudo).content;
      if (content && content !== 'none' && emoji.test(content)) found.push(content);
    }
  }
  return found;
}"""


def test_state_screens_show_no_empty_button_and_no_emoji(new_context, project, annotator):
    context = new_context(annotator, **PHONE)
    page = context.new_page()
    held = []
    page.route("**/tasks/next/", lambda route: held.append(route))
    page.goto(f"/annotate/{project.pk}/")
    page.wait_for_selector("text=Loading your next task")
    assert not page.is_visible("#state-action")

    held.pop().abort("internetdisconnected")
    page.wait_for_selector("text=You are offline")
    assert not page.is_visible("#state-action")
    assert page.evaluate(EMOJI) == []
    page.unroute("**/tasks/next/")

    # An answer made offline: the banner says it waits, in plain text and a drawn icon.
    page.reload()
    shown_lease(page)
    context.set_offline(True)
    page.tap("#submit")
    page.wait_for_selector("text=Offline · 1 answer waiting to be sent")
    assert page.evaluate(EMOJI) == []


def test_footer_follows_the_answers_given(new_context, project, annotator):
    page = new_context(annotator, **PHONE).new_page()
    page.goto(f"/annotate/{project.pk}/")
    page.wait_for_function("() => document.getElementById('today').textContent === '0'")
    assert page.inner_text("#stats-line") == "Your first answers: take your time."
    wait_for_lookahead(page, annotator, project)  # two answers from the tasks held ahead
    no_more_tasks(page)
    for n in (1, 2):
        lease = shown_lease(page)
        page.tap("#q0 .inc")
        page.tap("#submit")
        noun = "answer" if n == 1 else "answers"
        page.wait_for_function(
            "text => document.getElementById('stats-line').textContent.startsWith(text)",
            arg=f"{n} {noun} in all · ",
            timeout=5_000,
        )
        assert Observation.objects.filter(assignment=lease).exists()


def test_questions_seen_after_a_banner_goes_need_no_tap(new_context, project, annotator):
    """Issue 26, item 2: the "answers waiting" banner pushes the next task's second question
    behind the dock; when the answer is sent the banner goes and the question comes up without
    a scroll. Submit must say "Submit" then, not ask for a tap that does nothing."""
    from tests.frontend.test_annotate_browser import answer_by_taps, gold_counts

    page = new_context(annotator, **PHONE).new_page()
    held = []
    page.route("**/api/observations/", lambda route: held.append(route))
    page.goto(f"/annotate/{project.pk}/")
    lease = shown_lease(page)
    wait_for_lookahead(page, annotator, project)
    # A banner tall enough to push the second question of the next task behind the dock.
    page.evaluate("document.getElementById('pending').style.minHeight = '260px'")
    answer_by_taps(page, gold_counts(lease))
    page.wait_for_function(
        f"() => document.getElementById('task').dataset.assignment !== '{lease.pk}'"
    )
    page.wait_for_selector("text=1 answer waiting to be sent")
    assert page.evaluate(ON_SCREEN) == [0]
    assert page.inner_text("#submit") == "1 more question ↓"

    for _ in range(50):
        if held:
            break
        page.wait_for_timeout(100)
    held.pop().continue_()
    page.wait_for_selector("#pending", state="hidden")
    assert page.evaluate("window.scrollY") == 0
    assert page.evaluate(ON_SCREEN) == [0, 1]
    page.wait_for_function("() => document.getElementById('submit').textContent === 'Submit'")
    no_more_tasks(page)
