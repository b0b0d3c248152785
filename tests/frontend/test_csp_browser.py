"""The Content-Security-Policy (issue 24, item 10) in a real Chromium: the pages keep working
under it, and the browser reports no violation on any of them."""

import pytest

from tests.frontend.conftest import DESKTOP, PHONE
from tests.frontend.test_annotate_browser import answer_by_taps, gold_counts, shown_lease

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every violation the page meets, as the browser reports it to the page.
WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) =>
  window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
"""


def _page(context):
    page = context.new_page()
    page.add_init_script(WATCH)
    console = []
    page.on(
        "console",
        lambda m: console.append(m.text) if "Content Security Policy" in m.text else None,
    )
    return page, console


def _no_violation(page, console) -> None:
    assert page.evaluate("window.__violations") == [] and console == [], console


def test_the_pages_work_under_the_policy(new_context, project, annotator, manager):
    # The annotator's cycle, on a phone.
    page, console = _page(new_context(annotator, **PHONE))
    response = page.goto(f"/annotate/{project.pk}/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    for _ in range(2):
        lease = shown_lease(page)
        answer_by_taps(page, gold_counts(lease))
        page.wait_for_function(
            "previous => document.getElementById('task').dataset.assignment !== String(previous)",
            arg=lease.pk,
        )
    _no_violation(page, console)
    # The dashboard, the new-project form, the admin.
    context = new_context(manager, **DESKTOP)
    page, console = _page(context)
    page.goto(f"/projects/{project.pk}/")
    page.wait_for_selector("#exports a")
    assert page.eval_on_selector("#exports", "e => getComputedStyle(e).listStyleType") == "none"
    page.wait_for_selector("#kpis .kpi")  # the dashboard's scripts ran
    page.wait_for_selector("#live.on", timeout=15_000)  # and its event stream is open
    _no_violation(page, console)
    page, console = _page(context)
    page.goto("/projects/new/")
    page.check("#private")
    assert page.is_enabled("#alpha")  # the form's script runs
    _no_violation(page, console)


def test_the_api_docs_run_under_the_policy(new_context, manager):
    page, console = _page(new_context(manager, **DESKTOP))
    page.goto("/api/docs/")
    page.wait_for_selector(".opblock", timeout=20_000)  # Swagger UI drew the operations
    _no_violation(page, console)
