"""Corpus uploads through the API: a file sent twice is asked about, the preview reads as the
import does, and a CoNLL-U corpus comes back out as it went in (issue 17)."""

import gzip
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import CorpusImport
from tests.support.ewt import ewt_slice
from tests.support.factories import client_for, corpus_upload, jsonl, make_project

pytestmark = pytest.mark.django_db


def test_the_same_file_sent_twice_is_asked_about(project, manager):
    client = client_for(manager)
    assert corpus_upload(client, project, jsonl()).status_code == 201
    again = corpus_upload(client, project, gzip.compress(jsonl()), name="copy.jsonl.gz")
    assert again.status_code == 409
    error = again.json()["error"]
    assert error["code"] == "duplicate_corpus"
    assert "already imported" in error["message"] and "(c.jsonl, 12 sentences)" in error["message"]
    assert project.sentences.count() == 12 and CorpusImport.objects.count() == 1
    confirmed = corpus_upload(client, project, jsonl(), allow_duplicate="true")
    assert confirmed.status_code == 201 and project.sentences.count() == 24


def test_other_content_or_another_project_is_no_repeat(project, manager):
    client = client_for(manager)
    assert corpus_upload(client, project, jsonl()).status_code == 201
    assert corpus_upload(client, project, jsonl()[:-1] + b" \n").status_code == 201
    other = make_project(owner=manager)
    assert corpus_upload(client, other, jsonl()).status_code == 201


def test_preview_reads_the_head_of_a_file_as_the_import_would(manager):
    text = b"It's here. Isn't it?\n\nYes!\n"
    response = client_for(manager).post(
        "/api/corpus/preview/",
        {"file": SimpleUploadedFile("a.txt", text), "format": "text", "language": "en"},
        format="multipart",
    )
    assert response.status_code == 200, response.content
    assert [s["tokens"] for s in response.json()["sentences"]] == [
        ["It", "'s", "here", "."], ["Is", "n't", "it", "?"], ["Yes", "!"]
    ]  # fmt: skip
    assert not CorpusImport.objects.exists()


def test_preview_of_a_broken_file_says_where(manager):
    response = client_for(manager).post(
        "/api/corpus/preview/",
        {"file": SimpleUploadedFile("a.conllu", b"1\tA\n"), "format": "conllu"},
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid_corpus",
        "message": "line 1: expected 10 tab-separated columns, found 2.",
        "line": 1,
    }


def test_preview_needs_a_signed_in_user(client):
    response = client.post("/api/corpus/preview/", {"format": "text"})
    assert response.status_code in (401, 403)


def test_conllu_corpus_exported_as_it_was_imported(manager):
    """Issue 17: ids, comments, multiword tokens and `# text` were lost on export."""
    project = make_project(owner=manager, tag_preset="ud_upos", tags=None)
    source = ewt_slice(300, split="dev")
    body = {"file": SimpleUploadedFile("dev.conllu", source.encode()), "format": "conllu"}
    client = client_for(manager)
    response = client.post(f"/api/projects/{project.pk}/corpus/", body, format="multipart")
    assert response.status_code == 201, response.content
    exported = client.get(f"/api/projects/{project.pk}/exports/corpus.conllu")
    assert b"".join(exported.streaming_content).decode() == source
    assert re.search(r"^\d+-\d+\t", source, re.MULTILINE)  # the slice has multiword tokens


def test_sentences_added_to_a_project_of_one_sentence(project, manager):
    """Regression (issue 24 item 6): the next position was `(Max or -1) + 1`, so a project whose
    only sentence sat at position 0 put the next one at 0 again and every upload answered 500."""
    client = client_for(manager)
    one = b'{"tokens": ["Hello", "world", "."]}\n'
    assert corpus_upload(client, project, one).status_code == 201
    more = corpus_upload(client, project, b'{"tokens": ["Bye", "."]}\n{"tokens": ["Again", "."]}\n')
    assert more.status_code == 201, more.content
    assert list(project.sentences.order_by("position").values_list("position", flat=True)) == [
        0, 1, 2
    ]  # fmt: skip
