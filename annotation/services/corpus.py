"""Corpus import: a file read streaming, all or nothing, and a first round of tasks for it."""

from __future__ import annotations

import hashlib
import random
from typing import BinaryIO

from django.db import transaction
from django.db.models import Max

from annotation import importers, scheduler, selectors
from annotation.models import CorpusImport, Project, Sentence
from annotation.services.projects import project_create
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


def _refuse_repeat(record: CorpusImport) -> None:
    earlier = (
        CorpusImport.objects.filter(project=record.project, content_hash=record.content_hash)
        .exclude(pk=record.pk)
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
    and nothing is imported, unless `allow_duplicate`."""
    if not (0 <= evaluation_fraction <= 1 and 0 <= gold_check_fraction <= 1) or (
        evaluation_fraction + gold_check_fraction > 1
    ):
        raise InvalidInput(
            "evaluation_fraction and gold_check_fraction must be in 0..1 and sum to at most 1."
        )
    if project.status == Project.Status.ARCHIVED:
        raise ProjectNotActive("This project is archived.")
    project = Project.objects.select_for_update().get(pk=project.pk)  # one import at a time
    tag_index = {name: i for i, name in enumerate(selectors.project_tag_names(project=project))}
    rng = random.Random(seed)
    record = CorpusImport.objects.create(
        project=project,
        created_by=user,
        filename=filename[:255],
        format=format,
        tag_column=tag_column if format == CorpusImport.Format.CONLLU else "",
    )
    position = (project.sentences.aggregate(m=Max("position"))["m"] or -1) + 1
    batch: list[Sentence] = []
    n_sentences = n_gold = batch_tokens = 0
    digest = hashlib.sha256()
    try:
        lines = importers.read_lines(file, max_bytes=max_bytes, digest=digest)
        parsed_sentences = importers.parse(
            lines, format=format, tag_column=tag_column, language=project.language
        )
        for parsed in parsed_sentences:
            gold = None
            if parsed.tags is not None:
                try:
                    gold = [tag_index[tag] for tag in parsed.tags]
                except KeyError as exc:
                    raise importers.CorpusError(
                        parsed.line_number,
                        f"tag {exc.args[0]!r} is not in the project's tag set",
                    ) from exc
                n_gold += 1
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
                    multiword=parsed.multiword,
                )
            )
            position += 1
            n_sentences += 1
            batch_tokens += len(parsed.tokens)
            if len(batch) >= _SENTENCE_BATCH or batch_tokens >= _TOKEN_BATCH:
                Sentence.objects.bulk_create(batch)
                batch.clear()
                batch_tokens = 0
    except importers.CorpusError as exc:
        raise InvalidCorpus(as_sentence(str(exc)), line_number=exc.line_number) from exc
    except importers.CorpusTooLarge as exc:
        raise PayloadTooLarge(f"The corpus is larger than {max_bytes} bytes.") from exc
    Sentence.objects.bulk_create(batch)
    if not n_sentences:
        raise InvalidCorpus("line 1: the file contains no sentences.", line_number=1)
    record.content_hash = digest.hexdigest()
    if not allow_duplicate:
        _refuse_repeat(record)
    record.sentences, record.gold_sentences = n_sentences, n_gold
    record.save(update_fields=["sentences", "gold_sentences", "content_hash"])
    scheduler.tasks_generate(
        project=project,
        sentences=record.sentence_set.filter(split=Sentence.Split.TRAIN)
        .order_by("position")
        .values_list("id", "length")
        .iterator(chunk_size=2000),
        n_tags=len(tag_index),
        rng=rng,
        round=project.task_rounds,
    )
    return record


@transaction.atomic
def project_create_with_corpus(
    *, owner, project_fields: dict, file: BinaryIO, **corpus_fields
) -> Project:
    """A new project and its first corpus, together or not at all: a file that fails to import
    leaves no project behind."""
    project = project_create(owner=owner, **project_fields)
    corpus_import(project=project, user=owner, file=file, **corpus_fields)
    return project
