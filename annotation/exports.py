"""Streamed exports of a project: observations as JSONL or CSV, the corpus as CoNLL-U.

Each function returns an iterator of text chunks for a `StreamingHttpResponse`; rows are read
with a server-side cursor in chunks, so memory stays flat whatever the project's size.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

from annotation import selectors
from annotation.models import Observation, Project, Sentence
from common.api.output import iso
from learning.core.conllu import conllu_sentence
from learning.core.csvsafe import SafeCsvWriter  # the one CSV policy of the platform

_CHUNK = 2000
# Each exported column and the observation's field it holds (JSON lines: all, in this order).
_COLUMNS = {
    "id": "id",
    "assignment": "assignment_id",
    "annotator": "annotator_id",
    "annotator_username": "annotator__username",
    "sentence": "sentence_id",
    "start": "start",
    "length": "length",
    "tags": "tags",
    "counts": "counts",
    "is_gold": "is_gold",
    "seconds_on_device": "seconds_on_device",
    "submitted_at": "submitted_at",
    # Private projects: `counts` are the values released on the phone, and these say how.
    "mechanism": "mechanism",
    "alpha": "alpha",
    # Verification answers (`kind` verify; `tags` and `counts` empty): the tags shown under the
    # window's words, the model version that chose them, Yes (true) or No, and after a No the
    # position in the window (0-based) of the word tapped as wrong, if any.
    "kind": "kind",
    "shown": "shown_tags",
    "model_version": "model_version",
    "answer": "answer",
    "wrong": "wrong",
}
CSV_COLUMNS = [column for column in _COLUMNS if column != "assignment"]


def _observation_rows(project: Project) -> Iterator[dict]:
    names = selectors.project_tag_names(project=project)
    rows = Observation.objects.filter(project=project).order_by("id").values(*_COLUMNS.values())
    for row in rows.iterator(chunk_size=_CHUNK):
        out = {column: row[field] for column, field in _COLUMNS.items()}
        out["tags"] = [names[i] for i in out["tags"]]
        out["submitted_at"] = iso(out["submitted_at"])
        out["mechanism"] = out["mechanism"] or None
        if out["shown"] is not None:
            out["shown"] = [names[i] for i in out["shown"]]
        yield out


def observations_jsonl(*, project: Project) -> Iterator[str]:
    for row in _observation_rows(project):
        yield json.dumps(row, ensure_ascii=False) + "\n"


def observations_csv(*, project: Project) -> Iterator[str]:
    buffer = io.StringIO()
    writer = SafeCsvWriter(buffer)
    writer.writerow(CSV_COLUMNS)
    for i, row in enumerate(_observation_rows(project)):
        row["tags"] = "|".join(row["tags"])
        row["counts"] = "|".join(str(c) for c in row["counts"])
        row["is_gold"] = int(row["is_gold"])
        row["shown"] = "" if row["shown"] is None else "|".join(row["shown"])
        row["answer"] = {True: "yes", False: "no", None: ""}[row["answer"]]
        for column in ("seconds_on_device", "mechanism", "alpha", "model_version", "wrong"):
            row[column] = "" if row[column] is None else row[column]
        writer.writerow([row[column] for column in CSV_COLUMNS])
        if i % 200 == 199:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def corpus_conllu(*, project: Project) -> Iterator[str]:
    """Every sentence with its gold tags (`_` when it has none), as `sentence_conllu` writes it."""
    names = selectors.project_tag_names(project=project)
    rows = (
        Sentence.objects.filter(project=project)
        .order_by("position")
        .values_list(
            "id", "split", "tokens", "gold_tags", "text", "source", "corpus_import__tag_column"
        )
    )
    for pk, split, tokens, gold, text, source, column in rows.iterator(chunk_size=_CHUNK):
        tags = ["_"] * len(tokens) if gold is None else [names[tag] for tag in gold]
        yield sentence_conllu(
            sentence_id=pk, split=split, tokens=tokens, tags=tags, text=text, source=source,
            column=column,
        )  # fmt: skip


def sentence_conllu(
    *,
    sentence_id: int,
    split: str,
    tokens: list[str],
    tags: list[str],
    text: str,
    source: str,
    column: str | None,
) -> str:
    """One stored sentence in the corpus export. A sentence imported from CoNLL-U (`source`) is
    written as it was read (ids, comments, multiword tokens, every column) with `tags` in its tag
    `column`; the others get `# sent_id`, `# split` and `# text` and their tags in the UPOS
    column. Either way Tally's CoNLL-U reader reads it back to the same tokens and tags."""
    if source:
        return conllu_sentence(tokens, tags, source=source.split("\n"), column=column or "upos")
    return conllu_sentence(
        tokens,
        tags,
        comments=[("sent_id", sentence_id), ("split", split), ("text", text or " ".join(tokens))],
    )
