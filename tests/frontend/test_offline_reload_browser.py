"""The annotator page reloaded without a connection (issue 26, item 1): a service worker serves
the page and its modules from the device, the tasks held ahead come from the device's storage,
and the answers given offline are each stored once when the connection is back."""

import pytest

from annotation.models import Observation
from tests.frontend.conftest import PHONE
from tests.frontend.test_annotate_browser import (
    answer_offline,
    sent_once,
    shown_lease,
    wait_for_lookahead,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# True once the service worker serves this page and keeps the page itself and every module and
# stylesheet the page loaded.
KEPT_FOR_OFFLINE = """async () => {
  if (!navigator.serviceWorker.controller) return false;
  const names = await caches.keys();
  if (names.length !== 1) return false;
  const cache = await caches.open(names[0]);
  const wanted = [location.href, ...performance.getEntriesByType('resource').map((e) => e.name)
    .filter((url) => url.includes('/static/'))];
  const found = await Promise.all(wanted.map((url) => cache.match(url)));
  return found.every(Boolean);
}"""


def wait_until_kept_for_offline(page) -> None:
    for _ in range(100):
        if page.evaluate(KEPT_FOR_OFFLINE):  # awaited here (wait_for_function would not)
            return
        page.wait_for_timeout(100)
    raise AssertionError("the service worker did not keep the page and its modules")


def test_a_reload_offline_goes_on_with_the_tasks_held(new_context, project, annotator):
    context = new_context(annotator, **PHONE)
    page = context.new_page()
    page.goto(f"/annotate/{project.pk}/")
    first = shown_lease(page)
    wait_for_lookahead(page, annotator, project)
    wait_until_kept_for_offline(page)

    context.set_offline(True)
    page.reload()
    # The page, its modules and its tasks came from the device: the task on screen before the
    # reload is on screen again, and the two held ahead follow it.
    assert shown_lease(page).pk == first.pk
    assert "offline" in page.inner_text("#pending") or page.is_hidden("#pending")
    expected = answer_offline(page, 3)
    assert Observation.objects.count() == 0

    # Reloaded again offline with nothing left to answer: the answers are still waiting.
    page.reload()
    page.wait_for_selector("text=You are offline")
    page.wait_for_selector("text=Offline · 3 answers waiting to be sent")

    context.set_offline(False)
    sent_once(page, project, annotator, expected)
