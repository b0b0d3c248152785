"""A new user's first hour in a real Chromium (issue 17): a project made from a raw text file
(its first sentences shown tokenized before anything is imported), a failed upload that leaves
no project behind, "Add sentences" with the same form, a file sent twice asked about, settings
the corpus fixed shown as text, and a project deleted after its name is typed."""

import re

import pytest
from playwright.sync_api import expect

from annotation.models import CorpusImport, Project
from tests.frontend.conftest import DESKTOP, PHONE

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tokenizer_loaded"),
]


LICENCE = """Permission is hereby granted, free of charge, to any person obtaining a copy
of this software. The above copyright notice shall be included in all copies;
3, 4 or 5 copies are allowed.

THE SOFTWARE IS PROVIDED "AS IS". You can't sue us: go back!
"""


def test_project_from_a_raw_text_file_shows_its_sentences_tokenized_first(
    new_context, tmp_path, manager
):
    path = tmp_path / "LICENSE.txt"
    path.write_text(LICENCE, encoding="utf-8")
    page = new_context(manager, **DESKTOP).new_page()
    page.goto("/projects/new/")
    page.fill("#name", "Licence")
    page.set_input_files("#file", str(path))
    assert page.is_checked("input[name=format][value=text]")
    # No gold tags in plain text: no shares of gold sentences asked for (issue 17 walk).
    assert not page.locator("#evaluation_fraction").is_visible()
    assert not page.locator("#gold_check_fraction").is_visible()
    first = page.locator("#preview .preview-sentences li").first
    first.wait_for(timeout=30_000)
    words = first.locator(".tok").all_inner_texts()
    assert words[-3:] == ["this", "software", "."]  # not "software." nor a line's end
    assert page.locator("#preview .preview-sentences li").count() == 4
    assert not Project.objects.exists()  # nothing imported yet
    page.click("#create")
    page.wait_for_url(re.compile(r"/projects/\d+/$"))
    project = Project.objects.get(name="Licence")
    assert project.sentences.count() == 4 and project.language == "en"
    tokens = project.sentences.order_by("position")[3].tokens
    assert tokens[:3] == ["You", "ca", "n't"] and tokens[-2:] == ["back", "!"]


def test_a_failed_upload_leaves_no_project_and_every_setting_still_applies(
    new_context, tmp_path, manager
):
    path = tmp_path / "ptb.conllu"
    path.write_text("1\tThe\tthe\tDET\tDT\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    page = new_context(manager, **PHONE).new_page()
    page.goto("/projects/new/")
    page.fill("#name", "PTB")
    page.set_input_files("#file", str(path))
    page.click("input[name=preset][value=ud_upos]")
    page.select_option("#tag_column", "xpos")
    page.click("#create")
    error = page.locator("#form-error")
    error.wait_for()
    text = error.inner_text()
    assert "line 1: tag 'DT' is not in the project's tag set. No project was created" in text
    assert not Project.objects.exists()
    # Another tag set, and the same form creates the project with it (it kept UD tags before).
    page.click("input[name=preset][value=ptb]")
    assert page.input_value("#tag_column") == "xpos"
    page.click("#create")
    page.wait_for_url(re.compile(r"/projects/\d+/$"))
    project = Project.objects.get(name="PTB")
    assert project.tags.filter(name="DT").exists() and not project.tags.filter(name="DET").exists()
    assert project.sentences.get().gold_tags is not None


def test_add_sentences_is_the_same_form_and_a_repeat_is_asked_about(
    new_context, tmp_path, project, manager
):
    path = tmp_path / "more.txt"
    path.write_text("The dog barks. A cat sleeps.\n", encoding="utf-8")
    page = new_context(manager, **DESKTOP).new_page()
    page.goto(f"/projects/{project.pk}/")
    settings = page.locator("#fixed-settings")
    settings.get_by_text("English").wait_for()
    assert "fixed now that the project has sentences" in settings.inner_text()
    assert "(fixed: " not in settings.inner_text()  # issue 26: no parentheses in parentheses
    assert page.locator("#fixed-settings input, #fixed-settings select").count() == 0
    assert page.locator("#up-evaluation_fraction").is_visible()
    assert page.locator("#up-gold_check_fraction").is_visible()
    page.set_input_files("#up-file", str(path))
    # Not always CoNLL-U: guessed from the name once the file's change event is handled.
    expect(page.locator("input[name=up-format][value=text]")).to_be_checked()
    assert not page.locator("#up-evaluation_fraction").is_visible()  # text has no gold tags
    page.locator("#up-preview li").nth(1).wait_for(timeout=30_000)
    assert page.locator("#up-preview li").nth(1).locator(".tok").all_inner_texts() == [
        "A", "cat", "sleeps", "."
    ]  # fmt: skip
    page.click("#up-submit")
    page.locator("#imports li").nth(1).wait_for()
    assert CorpusImport.objects.filter(project=project).count() == 2

    dialogs = []

    def answer(dialog, accept):
        dialogs.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.set_input_files("#up-file", str(path))
    page.once("dialog", lambda dialog: answer(dialog, False))
    page.click("#up-submit")
    page.get_by_text("Not imported again.").wait_for()
    assert "already imported" in dialogs[0] and dialogs[0].endswith("Import it again?")
    assert CorpusImport.objects.filter(project=project).count() == 2
    page.once("dialog", lambda dialog: answer(dialog, True))
    page.click("#up-submit")
    page.locator("#imports li").nth(2).wait_for()
    assert CorpusImport.objects.filter(project=project).count() == 3


def test_a_manager_deletes_the_project_after_typing_its_name(new_context, project, manager):
    page = new_context(manager, **PHONE).new_page()
    page.goto(f"/projects/{project.pk}/")
    page.locator("#fixed-settings dt").first.wait_for()
    dialogs = []
    page.on("dialog", lambda dialog: dialogs.append(dialog) or dialog.dismiss())
    # Issue 26, item 8: asked in the page, not by the browser's prompt, with what happened said.
    page.click("#delete-project")
    assert page.is_visible("#delete-confirm")
    assert page.inner_text("#delete-expected") == project.name
    page.fill("#delete-name", "not the name")
    page.click("#delete-go")
    page.get_by_text("The name does not match: nothing was deleted.").wait_for()
    assert Project.objects.filter(pk=project.pk).exists()
    page.click("#delete-cancel")
    assert page.is_hidden("#delete-confirm")
    page.click("#delete-project")
    page.fill("#delete-name", project.name)
    page.click("#delete-go")
    page.get_by_text(f"“{project.name}” is deleted. Taking you to your projects…").wait_for()
    assert not Project.objects.filter(pk=project.pk).exists()
    page.wait_for_url(re.compile(r"^http://[^/]+/$"))
    assert dialogs == []


def test_an_invite_code_is_shown_whole_on_a_phone(new_context, project):
    """A code starting with '-' was cut after it at 360 px ("-" at a line's end, the rest below):
    a newcomer typing it from the page dropped the dash."""
    project.invite_code = "-xVKN8M9l5VtTvrW"
    project.save(update_fields=["invite_code"])
    page = new_context(None, **PHONE).new_page()
    page.goto(f"/join/{project.invite_code}")
    code = page.locator("main code").first
    assert code.inner_text() == project.invite_code
    assert code.evaluate("c => c.getClientRects().length") == 1
    box = code.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 360
