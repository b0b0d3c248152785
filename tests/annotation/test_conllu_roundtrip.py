"""Issue 24, item 7: what a CoNLL-U import refuses (with its line), and the property that whatever
any import accepts, the corpus export writes it so that Tally's own reader reads it back."""

import io
import json
import tempfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation import importers
from annotation.exports import sentence_conllu
from learning.core.conllu import iter_conllu, read_conllu
from tests.support.factories import client_for, make_project

WORD = "{id}\t{form}\t{lemma}\tNOUN\tNN\t_\t0\t{deprel}\t_\t{misc}"
REST = "\t_" * 8  # a multiword token's or empty node's columns after FORM


def conllu(*lines: str) -> str:
    return "\n".join(lines) + "\n\n"


def words(n: int, **columns: str) -> list[str]:
    fields = {"lemma": "x", "deprel": "dep", "misc": "_"} | columns
    return [WORD.format(id=i, form=f"w{i}", **fields) for i in range(1, n + 1)]


def refusal(text: str) -> importers.CorpusError:
    lines = importers.read_lines(io.BytesIO(text.encode()), max_bytes=10**6)
    with pytest.raises(importers.CorpusError) as error:
        list(importers.parse(lines, format="conllu"))
    return error.value


# What is refused, and where --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        (conllu("# sent_id = a\x00b", *words(2)), 1, "the comment contains a NUL character"),
        (conllu("# x", *words(1), *words(1, lemma="a\x00")[:1]), 3, "LEMMA contains a NUL"),
        (conllu(*words(2, deprel="d\x00")), 1, "DEPREL contains a NUL"),
        (conllu(*words(2, misc="SpaceAfter=No\x00")), 1, "MISC contains a NUL"),
        (conllu("# text = a\rb", *words(1)), 1, "carriage return inside the line"),
        (conllu(*words(1, lemma="a\x0bb")), 1, "LEMMA contains a control character (U+000B)"),
        (conllu(*words(1, misc="a\u2028b")), 1, "MISC contains a control character (U+2028)"),
        (conllu("# text = \u202eabc", *words(1)), 1, "bidirectional control character (U+202E)"),
        (conllu(*words(1, lemma="\u202ex")), 1, "LEMMA contains a bidirectional control"),
    ],
)
def test_a_character_that_cannot_be_stored_or_written_back_is_refused(text, line, says):
    """NUL in a comment or in LEMMA, MISC, DEPREL was a DataError (500) on PostgreSQL; the
    others were stored and written out, and the export did not read back."""
    error = refusal(text)
    assert error.line_number == line
    assert says in error.message, error.message


@pytest.mark.parametrize(
    ("lines", "line", "says"),
    [
        (["1-3\tab" + REST, *words(2)], 1, "ends at word 3, but the sentence has 2"),
        ([*words(1), "2-1\tab" + REST, *words(2)[1:]], 2, "start below end"),
        (["1-" + "9" * 20 + "\tab" + REST, *words(2)], 1, "malformed token id"),
        (["1-" + "9" * 5000 + "\tab" + REST, *words(2)], 1, "malformed token id"),
        (["3-4\tab" + REST, *words(4)], 1, "from 1 on"),
        (
            ["1-2\ta" + REST, words(1)[0], "2-3\tb" + REST, *words(3)[1:]],
            3,
            "overlaps the one before",
        ),  # fmt: skip
        (["1-2-3\tab" + REST, *words(3)], 1, "malformed token id"),
        (["²\tab\t_\tNOUN\t_\t_\t_\t_\t_\t_"], 1, "positive integer"),
        ([*words(1), "5.1\tx" + REST], 2, "empty node 5.1 must follow word 5"),
    ],
)
def test_malformed_multiword_ranges_and_ids_are_refused_with_their_line(lines, line, says):
    """`1-3` over 2 words, `2-1` and a range of 20 digits were accepted and exported (and 5,000
    digits, or a `²` id, were a 500: Python's int() refuses them)."""
    error = refusal(conllu(*lines))
    assert error.line_number == line
    assert says in error.message, error.message


def test_well_formed_ranges_and_empty_nodes_are_read():
    text = conllu(
        "1-2\tdu" + REST,
        *words(2),
        "2.1\tx" + REST,
        "3-4\tau" + REST,
        *words(4)[2:],
    )
    lines = importers.read_lines(io.BytesIO(text.encode()), max_bytes=10**6)
    [sentence] = importers.parse(lines, format="conllu")
    assert sentence.tokens == ["w1", "w2", "w3", "w4"]


def test_a_nul_in_a_conllu_upload_is_a_400_with_its_line_not_a_500(db, manager):
    """Through the API, on the database the suite runs on (PostgreSQL: DataError before)."""
    project = make_project(owner=manager)
    text = conllu("# sent_id = 1", *words(2, misc="Note=a\x00b"))
    body = {"file": SimpleUploadedFile("c.conllu", text.encode()), "format": "conllu"}
    response = client_for(manager).post(
        f"/api/projects/{project.pk}/corpus/", body, format="multipart"
    )
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert (error["code"], error["line"]) == ("invalid_corpus", 2)
    assert "MISC contains a NUL character" in error["message"]
    assert not project.sentences.exists()


def test_control_characters_in_plain_text_never_reach_the_text_line(db, manager, tmp_path):
    """CR, VT, FF, NEL, U+2028 between words of plain text went into `# text =` as they were,
    and the gold export did not read back. Imported through the API, exported, read back."""
    project = make_project(owner=manager)
    text = "One\rtwo\x0bthree\x0cfour\x85five\u2028six\u2029seven\x1ceight.\n"
    client = client_for(manager)
    body = {"file": SimpleUploadedFile("t.txt", text.encode()), "format": "text"}
    response = client.post(f"/api/projects/{project.pk}/corpus/", body, format="multipart")
    assert response.status_code == 201, response.content
    exported = client.get(f"/api/projects/{project.pk}/exports/corpus.conllu")
    path = tmp_path / "gold.conllu"
    path.write_bytes(b"".join(exported.streaming_content))
    stored = [s.tokens for s in project.sentences.order_by("position")]
    assert [s.tokens for s in read_conllu(path)] == stored
    assert [s.tokens for s in iter_conllu(path.read_text().splitlines())] == stored


# The property: whatever an import accepts, its export reads back --------------------------------

# Text with every kind of character an upload can hold: control characters, separators, bidi
# controls, combining marks, emoji, surrogates excluded (UTF-8 cannot hold them).
NASTY = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("\x00\t\r\x0b\x0c\x1c\x85\u2028\u2029\u202e\u2066 #=-.|_\\")),
        st.sampled_from(list("ab1²٣ǅ\u0301\u200d😀")),
        st.characters(exclude_categories=("Cs",)),
    ),
    max_size=12,
)
COLUMN = NASTY.filter(lambda value: "\n" not in value)


def _conllu_sentence(draw) -> str:
    lines = [f"# {draw(COLUMN)}" for _ in range(draw(st.integers(0, 2)))]
    n = draw(st.integers(1, 4))
    for i in range(1, n + 1):
        if draw(st.booleans()) and i < n:
            end = draw(st.sampled_from([i + 1, i + 2, i - 1, 10**20]))
            lines.append(f"{i}-{end}\t{draw(COLUMN)}\t_\t_\t_\t_\t_\t_\t_\t_")
        columns = [str(i), draw(COLUMN), draw(COLUMN), draw(st.sampled_from(["NOUN", "_", "X"]))]
        columns += [draw(COLUMN) for _ in range(6)]
        lines.append("\t".join(columns))
    return "\n".join(lines) + "\n\n"


@st.composite
def uploads(draw) -> tuple[str, str]:
    form = draw(st.sampled_from(["conllu", "text", "tokenized", "jsonl"]))
    if form == "conllu":
        return form, "".join(_conllu_sentence(draw) for _ in range(draw(st.integers(1, 3))))
    if form == "jsonl":
        records = [
            {"tokens": draw(st.lists(COLUMN, min_size=1, max_size=4))}
            for _ in range(draw(st.integers(1, 3)))
        ]
        return form, "".join(json.dumps(r) + "\n" for r in records)
    return form, "\n".join(draw(st.lists(NASTY, min_size=1, max_size=4))) + "\n"


def _read_back(exported: str) -> list[list[list[str]]]:
    """The export read by each of Tally's ways of reading CoNLL-U: lines split at LF (uploads),
    a file opened as text (learning.core.tag, read_conllu), and str.splitlines."""
    with tempfile.NamedTemporaryFile("wb", suffix=".conllu") as file:
        file.write(exported.encode())
        file.flush()
        from_file = [s.tokens for s in read_conllu(file.name)]
    by_lf = [s.tokens for s in iter_conllu(exported.split("\n"))]
    by_splitlines = [s.tokens for s in iter_conllu(exported.splitlines())]
    return [from_file, by_lf, by_splitlines]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(uploads())
def test_whatever_an_import_accepts_its_conllu_export_reads_back(upload):
    form, text = upload
    lines = importers.read_lines(io.BytesIO(text.encode()), max_bytes=10**6)
    try:
        accepted = list(importers.parse(lines, format=form, tag_column="upos", language="en"))
    except importers.CorpusError:
        return  # refused with its line: nothing stored, nothing to export
    exported = "".join(
        sentence_conllu(
            sentence_id=i + 1, split="train", tokens=s.tokens, tags=s.tags or ["_"] * len(s.tokens),
            text=s.text, source=s.source, column="upos",
        )
        for i, s in enumerate(accepted)
    )  # fmt: skip
    for read in _read_back(exported):
        assert read == [s.tokens for s in accepted]
    # And it imports again, to the same sentences: an export is a valid upload.
    again = importers.read_lines(io.BytesIO(exported.encode()), max_bytes=10**6)
    assert [s.tokens for s in importers.parse(again, format="conllu")] == [
        s.tokens for s in accepted
    ]
