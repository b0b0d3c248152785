"""Two annotators on one phone (issue 44, item 1): after A signs out, nothing of A's stays on the
device for the next person, the annotator page never shows A's tasks or keeps answers as A once
the browser is not A's session, and an answer A's page queued is refused when someone else's
session sends it (docs/decisions/045-shared-phone.md). One browser context is the phone."""

from urllib.parse import urlsplit

import pytest

from annotation.models import Observation
from tests.frontend.conftest import PASSWORD, PHONE, session_client_for
from tests.frontend.test_annotate_browser import (
    answer_by_taps,
    gold_counts,
    shown_lease,
    wait_for_lookahead,
)
from tests.frontend.test_offline_reload_browser import wait_until_kept_for_offline
from tests.support.factories import member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIGNED_IN_COOKIE = "tally_signed_in"  # accounts.device.COOKIE
TALLY_KEYS = "() => Object.keys(localStorage).filter((key) => key.startsWith('tally.')).sort()"
OFFLINE_COPIES = """async () => ({
  caches: await caches.keys(),
  workers: (await navigator.serviceWorker.getRegistrations()).length,
})"""
# A sign-out form without the page's script: what the server's response does on its own.
BARE_SIGN_OUT = """() => {
  const form = Object.assign(document.createElement('form'), {method: 'post', action: '/logout/'});
  const token = document.querySelector('input[name=csrfmiddlewaretoken]').value;
  form.append(Object.assign(document.createElement('input'),
    {type: 'hidden', name: 'csrfmiddlewaretoken', value: token}));
  document.body.append(form);
  form.submit();
}"""
# The first answer in `key`'s outbox, as the page would send it.
QUEUED = """(key) => {
  const {project, kind, device_session, ...body} = JSON.parse(localStorage.getItem(key))[0];
  return body;
}"""
REPLAY = """async (body) => {
  const token = document.cookie.match(/csrftoken=([^;]+)/)[1];
  const response = await fetch('/api/observations/', {method: 'POST', body: JSON.stringify(body),
    headers: {'Content-Type': 'application/json', 'X-CSRFToken': token}});
  return {status: response.status, body: await response.json()};
}"""


@pytest.fixture
def a(annotator):
    annotator.set_password(PASSWORD)
    annotator.save()
    return annotator


@pytest.fixture
def b(project):
    user = member(project, username="second")
    user.set_password(PASSWORD)
    user.save()
    return user


def sign_in(page, user, project) -> None:
    page.goto(f"/login/?next=/annotate/{project.pk}/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button.primary")
    page.wait_for_url(f"**/annotate/{project.pk}/")


def sign_out(page) -> None:
    page.goto("/")
    page.click("form[action='/logout/'] button")
    page.wait_for_url("**/login/")


def as_session_of(context, user) -> None:
    """The phone's session is `user`'s, without anyone signing out (A's session ended, or was
    replaced): the cookies a browser would have after `user` signed in."""
    context.clear_cookies()
    session = session_client_for(user).cookies["sessionid"].value
    parts = urlsplit(context.pages[0].url)
    url = f"{parts.scheme}://{parts.netloc}"
    context.add_cookies([{"name": "sessionid", "value": session, "url": url}])
    context.request.get("/")  # sets the signed-in cookie, in the context's jar


def keys_of(page, user) -> list[str]:
    return [key for key in page.evaluate(TALLY_KEYS) if f".{user.pk}" in key]


def queue_one_answer(page, project, user) -> dict:
    """A answers the task on screen while the answers cannot reach the server: it waits in A's
    outbox. Returns the answer's true counts by lease id."""
    page.route("**/api/observations/", lambda route: route.abort())
    lease = shown_lease(page)
    counts = gold_counts(lease)
    answer_by_taps(page, counts)
    page.wait_for_selector("text=1 answer waiting to be sent")
    return {lease.pk: counts}


def open_a_page_kept_for_offline(page, user, project) -> None:
    sign_in(page, user, project)
    shown_lease(page)
    wait_for_lookahead(page, user, project)
    wait_until_kept_for_offline(page)
    assert keys_of(page, user)


def test_signing_out_sends_the_outbox_and_clears_the_annotators_storage_and_caches(
    new_context, project, a
):
    context = new_context(**PHONE)
    page = context.new_page()
    open_a_page_kept_for_offline(page, a, project)
    expected = queue_one_answer(page, project, a)
    page.goto("/")  # the annotator page is gone before its sender retries
    page.unroute("**/api/observations/")
    assert Observation.objects.count() == 0

    page.click("form[action='/logout/'] button")
    page.wait_for_url("**/login/")
    # Sent while A was still signed in, as A's.
    stored = Observation.objects.get()
    assert stored.annotator == a and stored.assignment_id in expected
    assert 0 < stored.seconds_on_device < 60
    # Nothing of A's is left: no held task, no outbox, no copy of the page, no worker.
    assert page.evaluate(TALLY_KEYS) == []
    assert page.evaluate(OFFLINE_COPIES) == {"caches": [], "workers": 0}
    assert SIGNED_IN_COOKIE not in {cookie["name"] for cookie in context.cookies()}


@pytest.mark.parametrize("how", ["sign-out button", "form without its script"])
def test_signed_out_and_offline_the_last_annotators_page_is_not_served(
    new_context, project, a, how
):
    context = new_context(**PHONE)
    page = context.new_page()
    open_a_page_kept_for_offline(page, a, project)
    if how == "sign-out button":
        sign_out(page)
    else:  # the server's Clear-Site-Data alone
        page.goto("/")
        page.evaluate(BARE_SIGN_OUT)
        page.wait_for_url("**/login/")
    assert page.evaluate(TALLY_KEYS) == []
    assert page.evaluate(OFFLINE_COPIES) == {"caches": [], "workers": 0}

    context.set_offline(True)
    try:
        page.goto(f"/annotate/{project.pk}/")
    except Exception as error:  # noqa: BLE001 - Playwright's Error: nothing served, as wanted
        assert "ERR_INTERNET_DISCONNECTED" in str(error)
    assert page.locator("#app").count() == 0  # no annotator page at all, A's or anyone's
    context.set_offline(False)
    assert Observation.objects.count() == 0


def test_a_page_kept_from_before_the_session_ended_is_not_served_offline(new_context, project, a):
    """The session ended without this browser's sign-out (it expired, or was signed out
    elsewhere): the service worker and its copies are still here, the signed-in cookie is not."""
    context = new_context(**PHONE)
    page = context.new_page()
    open_a_page_kept_for_offline(page, a, project)
    context.clear_cookies()
    context.set_offline(True)
    page.reload()
    page.wait_for_selector("text=You are signed out")
    assert page.locator("#app").count() == 0
    context.set_offline(False)


def test_a_page_of_a_kept_offline_shows_and_keeps_nothing_once_b_is_signed_in(
    new_context, project, a, b
):
    context = new_context(**PHONE)
    page = context.new_page()
    open_a_page_kept_for_offline(page, a, project)
    as_session_of(context, b)
    context.set_offline(True)
    page.reload()  # the worker's copy of A's page
    page.wait_for_selector("text=This page was someone else’s")
    assert page.get_attribute("#app", "data-user") == str(a.pk)
    assert page.is_hidden("#task")
    page.keyboard.press("Enter")
    page.keyboard.press("+")
    assert page.is_disabled("#submit")
    # A's held tasks are forgotten; no answer was kept, as A or as B.
    assert keys_of(page, a) == [] and keys_of(page, b) == []
    context.set_offline(False)
    assert Observation.objects.count() == 0


@pytest.mark.parametrize("how", ["A signed out", "A's session ended"])
def test_b_signing_in_after_a_finds_none_of_as_held_tasks(new_context, project, a, b, how):
    context = new_context(**PHONE)
    page = context.new_page()
    open_a_page_kept_for_offline(page, a, project)
    if how == "A signed out":
        sign_out(page)
    else:
        context.clear_cookies()
    sign_in(page, b, project)
    assert shown_lease(page).annotator == b
    wait_for_lookahead(page, b, project)
    assert not [key for key in keys_of(page, a) if key.startswith("tally.held.")]
    assert page.get_attribute("#app", "data-user") == str(b.pk)


def test_an_answer_queued_by_a_and_replayed_under_bs_session_is_refused(new_context, project, a, b):
    context = new_context(**PHONE)
    page = context.new_page()
    open_a_page_kept_for_offline(page, a, project)
    queue_one_answer(page, project, a)
    body = page.evaluate(QUEUED, f"tally.outbox.{a.pk}")
    assert body["device_user"] == a.pk
    page.unroute("**/api/observations/")

    as_session_of(context, b)
    page.goto("/")
    reply = page.evaluate(REPLAY, body)
    assert reply["status"] == 409
    assert reply["body"]["error"]["code"] == "answered_as_another"
    assert Observation.objects.count() == 0
    # B's annotator page leaves A's answer where it is, unsent.
    page.goto(f"/annotate/{project.pk}/")
    assert shown_lease(page).annotator == b
    assert len(page.evaluate(f"() => JSON.parse(localStorage.getItem('tally.outbox.{a.pk}'))")) == 1
    assert not Observation.objects.filter(annotator=a).exists()


def test_a_page_left_open_stops_when_a_signs_out_in_another_tab(new_context, project, a):
    context = new_context(**PHONE)
    page = context.new_page()
    sign_in(page, a, project)
    shown_lease(page)
    wait_for_lookahead(page, a, project)
    other = context.new_page()
    sign_out(other)
    page.bring_to_front()
    page.wait_for_selector("text=Your session has ended")
    assert page.is_hidden("#task") and page.is_disabled("#submit")
    page.keyboard.press("Enter")
    # Nothing kept as A, nothing held for A written back.
    assert keys_of(page, a) == []
    assert Observation.objects.count() == 0


def test_a_page_of_an_earlier_session_of_a_kept_offline_shows_nothing(new_context, project, a):
    """A signed out (somewhere the device did not hear of) and in again: the copy of the page
    is of the session that ended, and answers given there would be of no session."""
    context = new_context(**PHONE)
    page = context.new_page()
    open_a_page_kept_for_offline(page, a, project)
    as_session_of(context, a)
    context.set_offline(True)
    page.reload()
    page.wait_for_selector("text=This page is from an earlier sign-in")
    assert page.is_hidden("#task") and page.is_disabled("#submit")
    assert not [key for key in keys_of(page, a) if key.startswith("tally.held.")]
    context.set_offline(False)
