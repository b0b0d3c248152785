"""A large upload on the dashboard, in a real Chromium (issue 24 item 1): the API answers 202 and
a job; the Corpus card shows it waiting, its progress, and its end, and Cancel stops it."""

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import ImportJob
from tests.frontend.conftest import DESKTOP

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _tokenized(n: int, word: str) -> str:
    return "".join(f"{word}{i} runs .\n" for i in range(n))


def _format_guessed(page) -> None:
    """Wait for the page to guess the format from the file's name (plain text for .txt): choosing
    the format before its change handler ran would be undone by the guess."""
    expect(page.locator("input[name=up-format][value=text]")).to_be_checked()


def test_a_large_upload_is_followed_and_can_be_cancelled(
    new_context, manager, project, settings, tmp_path
):
    settings.TALLY_IMPORT_SYNC_SENTENCES = 50
    page = new_context(manager, **DESKTOP).new_page()
    page.goto(f"/projects/{project.pk}/")
    first = tmp_path / "first.txt"
    first.write_text(_tokenized(400, "a"), encoding="utf-8")
    page.set_input_files("#up-file", str(first))
    _format_guessed(page)
    page.check("input[name=up-format][value=tokenized]")
    page.click("#up-submit")
    job = page.locator("#import-jobs li").first
    job.get_by_text("waiting for a worker").wait_for()
    assert "first.txt" in job.inner_text()

    job.get_by_role("button", name="Cancel").click()
    page.locator("#import-jobs li", has_text="cancelled, nothing imported").wait_for()
    assert ImportJob.objects.get().status == "cancelled"

    second = tmp_path / "second.txt"
    second.write_text(_tokenized(400, "b"), encoding="utf-8")
    page.set_input_files("#up-file", str(second))
    _format_guessed(page)
    page.check("input[name=up-format][value=tokenized]")
    page.click("#up-submit")
    page.locator("#import-jobs li", has_text="second.txt").get_by_text(
        "waiting for a worker"
    ).wait_for()
    (queued,) = ImportJob.objects.filter(status="queued")
    assert services.import_job_run(job_id=queued.pk) == "done"  # as a worker would
    # The page polls: the job leaves the running list, and the import is listed.
    page.locator("#imports li", has_text="second.txt").wait_for()
    assert "400 sentences" in page.locator("#imports li", has_text="second.txt").inner_text()
    assert page.locator("#import-jobs li", has_text="second.txt").count() == 0
