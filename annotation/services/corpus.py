"""Corpus import: a file read streaming, all or nothing, and a first round of tasks for it.

What one import may create is bounded (`TALLY_MAX_IMPORT_SENTENCES` per file,
`TALLY_MAX_PROJECT_SENTENCES` and `TALLY_MAX_PROJECT_TASKS` per project): a 1 KB gzip file can
hold a million one-word sentences. Uploads come through `annotation.services.uploads`, which
imports small files with `corpus_import` and large ones as jobs, with the helpers below.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from annotation import importers, scheduler, selectors
from annotation.models import CorpusImport, Project, Sentence, Task
from common.exceptions import (
    DuplicateCorpus,
    InvalidCorpus,
    InvalidInput,
    PayloadTooLarge,
    ProjectNotActive,
)
from common.text import as_sentence

# Sentences are stored a batch at a time, so an import holds at most a batch in memory, however
# large the file: at most this many sentences, and at most this many tokens (long sentences).
_SENTENCE_BATCH = 1000
_TOKEN_BATCH = 20_000


def _split_for(
    tags: list[str] | None, rng: random.Random, evaluation: float, gold_check: float
) -> str:
    if tags is None:
        return Sentence.Split.TRAIN
    draw = rng.random()
    if draw < evaluation:
        return Sentence.Split.EVALUATION
    if draw < evaluation + gold_check:
        return Sentence.Split.GOLD_CHECK
    return Sentence.Split.TRAIN


def refuse_repeat(*, project: Project, content_hash: str, exclude: int | None = None) -> None:
    earlier = (
        CorpusImport.objects.filter(project=project, content_hash=content_hash)
        .exclude(pk=exclude)
        .order_by("id")
        .first()
    )
    if earlier is not None:
        raise DuplicateCorpus(
            f"This file was already imported on {earlier.created_at:%Y-%m-%d %H:%M} UTC "
            f"({earlier.filename or earlier.format}, {earlier.sentences} sentences). "
            "Import it again only if you mean to: send allow_duplicate=true.",
            fields={"file": [f"Same content as import {earlier.pk}."]},
        )


def too_large(what: str, setting: str) -> PayloadTooLarge:
    limit = getattr(settings, setting)
    return PayloadTooLarge(
        f"{what} more than {limit:,} {'tasks' if 'TASKS' in setting else 'sentences'}, the "
        f"limit of this server: split the file, or ask its administrator to raise {setting}."
    )


def check_request(
    *, project: Project, evaluation_fraction: float, gold_check_fraction: float
) -> None:
    if not (0 <= evaluation_fraction <= 1 and 0 <= gold_check_fraction <= 1) or (
        evaluation_fraction + gold_check_fraction > 1
    ):
        raise InvalidInput(
            "evaluation_fraction and gold_check_fraction must be in 0..1 and sum to at most 1."
        )
    if project.status == Project.Status.ARCHIVED:
        raise ProjectNotActive("This project is archived.")


def check_project_room(*, project: Project, adding: int) -> None:
    if project.sentences.count() + adding > settings.TALLY_MAX_PROJECT_SENTENCES:
        raise too_large("The project would hold", "TALLY_MAX_PROJECT_SENTENCES")


def sentences_parsed(
    file: BinaryIO,
    *,
    format: str,
    tag_column: str,
    language: str,
    tag_index: dict[str, int],
    max_bytes: int,
    digest: hashlib._Hash | None = None,
) -> Iterator[tuple[importers.ParsedSentence, list[int] | None]]:
    """The file's sentences with their gold tags as indices; errors as the API states them, the
    limit of sentences per import included."""
    n_sentences = 0
    try:
        lines = importers.read_lines(file, max_bytes=max_bytes, digest=digest)
        for parsed in importers.parse(
            lines, format=format, tag_column=tag_column, language=language
        ):
            n_sentences += 1
            if n_sentences > settings.TALLY_MAX_IMPORT_SENTENCES:
                raise too_large("The file holds", "TALLY_MAX_IMPORT_SENTENCES")
            gold = None
            if parsed.tags is not None:
                try:
                    gold = [tag_index[tag] for tag in parsed.tags]
                except KeyError as exc:
                    raise importers.CorpusError(
                        parsed.line_number,
                        f"tag {exc.args[0]!r} is not in the project's tag set",
                    ) from exc
            yield parsed, gold
    except importers.CorpusError as exc:
        raise InvalidCorpus(as_sentence(str(exc)), line_number=exc.line_number) from exc
    except importers.CorpusTooLarge as exc:
        raise PayloadTooLarge(f"The corpus is larger than {max_bytes} bytes.") from exc
    if not n_sentences:
        raise InvalidCorpus("line 1: the file contains no sentences.", line_number=1)


def sentences_write(
    *,
    project: Project,
    record: CorpusImport,
    sentences: Iterable[tuple[importers.ParsedSentence, list[int] | None]],
    evaluation_fraction: float,
    gold_check_fraction: float,
    rng: random.Random,
    on_batch: Callable[[int], None] | None = None,
) -> tuple[int, int]:
    """Store `sentences` after the project's last one, a batch at a time (call inside the
    import's transaction, with the project locked); `on_batch(n_so_far)` after each batch.
    Returns (sentences, gold sentences)."""
    # Not `or -1`: a project whose one sentence is at position 0 has a maximum of 0 (issue 24).
    highest = project.sentences.aggregate(m=Max("position"))["m"]
    position = 0 if highest is None else highest + 1
    room = settings.TALLY_MAX_PROJECT_SENTENCES - project.sentences.count()
    batch: list[Sentence] = []
    n_sentences = n_gold = batch_tokens = 0
    for parsed, gold in sentences:
        if n_sentences >= room:
            raise too_large("The project would hold", "TALLY_MAX_PROJECT_SENTENCES")
        n_gold += gold is not None
        batch.append(
            Sentence(
                project=project,
                corpus_import=record,
                position=position,
                tokens=parsed.tokens,
                length=len(parsed.tokens),
                gold_tags=gold,
                split=_split_for(gold, rng, evaluation_fraction, gold_check_fraction),
                text=parsed.text,
                source=parsed.source,
            )
        )
        position += 1
        n_sentences += 1
        batch_tokens += len(parsed.tokens)
        if len(batch) >= _SENTENCE_BATCH or batch_tokens >= _TOKEN_BATCH:
            Sentence.objects.bulk_create(batch)
            batch.clear()
            batch_tokens = 0
            if on_batch is not None:
                on_batch(n_sentences)
    Sentence.objects.bulk_create(batch)
    return n_sentences, n_gold


def import_tasks_generate(*, project: Project, record: CorpusImport, n_tags: int, rng) -> None:
    train = record.sentence_set.filter(split=Sentence.Split.TRAIN)
    # One task per training sentence: refused before any is written if that is too many.
    if Task.objects.filter(project=project).count() + train.count() > (
        settings.TALLY_MAX_PROJECT_TASKS
    ):
        raise too_large("The project would hold", "TALLY_MAX_PROJECT_TASKS")
    scheduler.tasks_generate(
        project=project,
        sentences=train.order_by("position").values_list("id", "length").iterator(chunk_size=2000),
        n_tags=n_tags,
        rng=rng,
        round=project.task_rounds,
    )


def project_lock_for_import(project: Project) -> Project:
    # One import at a time per project. FOR NO KEY UPDATE: answers (whose foreign keys take a
    # key-share lock on the project) are not held up by an import being written.
    return Project.objects.select_for_update(no_key=True).get(pk=project.pk)


@transaction.atomic
def corpus_import(
    *,
    project: Project,
    user,
    file: BinaryIO,
    filename: str = "",
    format: str,
    tag_column: str = "upos",
    evaluation_fraction: float = 0.0,
    gold_check_fraction: float = 0.0,
    seed: int | None = None,
    max_bytes: int,
    allow_duplicate: bool = False,
) -> CorpusImport:
    """Import a corpus file, streaming, all or nothing; generate a round of tasks for it.

    Plain text is cut into sentences and tokens by the project's language's tokenizer. A file
    whose content (after gzip) was imported into the project before raises `DuplicateCorpus`,
    and nothing is imported, unless `allow_duplicate`. Beyond a limit (see the module's
    docstring) `PayloadTooLarge`, and nothing is imported."""
    check_request(
        project=project,
        evaluation_fraction=evaluation_fraction,
        gold_check_fraction=gold_check_fraction,
    )
    project = project_lock_for_import(project)
    tag_index = {name: i for i, name in enumerate(selectors.project_tag_names(project=project))}
    rng = random.Random(seed)
    record = CorpusImport.objects.create(
        project=project,
        created_by=user,
        filename=filename[:255],
        format=format,
        tag_column=tag_column if format == CorpusImport.Format.CONLLU else "",
    )
    digest = hashlib.sha256()
    parsed = sentences_parsed(
        file,
        format=format,
        tag_column=tag_column,
        language=project.language,
        tag_index=tag_index,
        max_bytes=max_bytes,
        digest=digest,
    )
    n_sentences, n_gold = sentences_write(
        project=project,
        record=record,
        sentences=parsed,
        evaluation_fraction=evaluation_fraction,
        gold_check_fraction=gold_check_fraction,
        rng=rng,
    )
    record.content_hash = digest.hexdigest()
    if not allow_duplicate:
        refuse_repeat(project=project, content_hash=record.content_hash, exclude=record.pk)
    record.sentences, record.gold_sentences = n_sentences, n_gold
    record.save(update_fields=["sentences", "gold_sentences", "content_hash"])
    import_tasks_generate(project=project, record=record, n_tags=len(tag_index), rng=rng)
    return record
