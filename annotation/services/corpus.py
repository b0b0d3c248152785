"""Corpus import: a file read streaming, all or nothing, and a first round of tasks for it.

What one import may create is bounded (`TALLY_MAX_IMPORT_SENTENCES` per file,
`TALLY_MAX_PROJECT_SENTENCES` and `TALLY_MAX_PROJECT_TASKS` per project): a 1 KB gzip file can
hold a million one-word sentences. `corpus_upload` is the API's entry: a quick scan refuses a file
over a limit at once (413), a small file is imported within the request, and a large one becomes
an `ImportJob` that a worker runs (`import_job_run`): parsed into a spool with progress reported,
then written in one transaction, so a job cancelled or killed leaves nothing half-imported.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import random
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from typing import BinaryIO

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from annotation import importers, scheduler, selectors
from annotation.models import CorpusImport, ImportJob, Project, Sentence, Task
from annotation.services.projects import project_create
from common.exceptions import (
    Conflict,
    DomainError,
    DuplicateCorpus,
    InvalidCorpus,
    InvalidInput,
    PayloadTooLarge,
    ProjectNotActive,
)
from common.text import as_sentence

logger = logging.getLogger(__name__)

# Sentences are stored a batch at a time, so an import holds at most a batch in memory, however
# large the file: at most this many sentences, and at most this many tokens (long sentences).
_SENTENCE_BATCH = 1000
_TOKEN_BATCH = 20_000
# A job reports its progress (and looks for a cancellation) every this many sentences.
_PROGRESS_EVERY = 2000
# The first sentences of a file too large for the request are parsed before it is accepted as
# a job, so that a broken file is refused at once, with its line.
_HEAD_SENTENCES = 50
_TEXT_SYNC_SHARE = 8
_HEAD_LINES = 5000
_HEAD_CHARACTERS = 2 * importers.MAX_LINE_BYTES  # a longest line, whole, and more


def _head(lines: Iterable[str]) -> Iterator[str]:
    """The first lines of a file: at most `_HEAD_LINES` of them, up to `_HEAD_CHARACTERS`."""
    size = 0
    for line in itertools.islice(lines, _HEAD_LINES):
        yield line
        size += len(line)
        if size > _HEAD_CHARACTERS:
            return


# A running job whose worker has not reported for this long is taken over by the next delivery
# of its task (the worker was killed: its transaction, if any, was rolled back).
JOB_STALE = timedelta(minutes=5)


class _Cancelled(Exception):
    """The job was cancelled while it ran: its transaction is rolled back."""


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


def _refuse_repeat(*, project: Project, content_hash: str, exclude: int | None = None) -> None:
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


def _too_large(what: str, setting: str) -> PayloadTooLarge:
    limit = getattr(settings, setting)
    return PayloadTooLarge(
        f"{what} more than {limit:,} {'tasks' if 'TASKS' in setting else 'sentences'}, the "
        f"limit of this server: split the file, or ask its administrator to raise {setting}."
    )


def _check_request(
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


def _check_project_room(*, project: Project, adding: int) -> None:
    if project.sentences.count() + adding > settings.TALLY_MAX_PROJECT_SENTENCES:
        raise _too_large("The project would hold", "TALLY_MAX_PROJECT_SENTENCES")


def _parsed(
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
                raise _too_large("The file holds", "TALLY_MAX_IMPORT_SENTENCES")
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


def _write(
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
            raise _too_large("The project would hold", "TALLY_MAX_PROJECT_SENTENCES")
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


def _tasks_generate(*, project: Project, record: CorpusImport, n_tags: int, rng) -> None:
    train = record.sentence_set.filter(split=Sentence.Split.TRAIN)
    # One task per training sentence: refused before any is written if that is too many.
    if Task.objects.filter(project=project).count() + train.count() > (
        settings.TALLY_MAX_PROJECT_TASKS
    ):
        raise _too_large("The project would hold", "TALLY_MAX_PROJECT_TASKS")
    scheduler.tasks_generate(
        project=project,
        sentences=train.order_by("position").values_list("id", "length").iterator(chunk_size=2000),
        n_tags=n_tags,
        rng=rng,
        round=project.task_rounds,
    )


def _lock(project: Project) -> Project:
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
    _check_request(
        project=project,
        evaluation_fraction=evaluation_fraction,
        gold_check_fraction=gold_check_fraction,
    )
    project = _lock(project)
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
    parsed = _parsed(
        file,
        format=format,
        tag_column=tag_column,
        language=project.language,
        tag_index=tag_index,
        max_bytes=max_bytes,
        digest=digest,
    )
    n_sentences, n_gold = _write(
        project=project,
        record=record,
        sentences=parsed,
        evaluation_fraction=evaluation_fraction,
        gold_check_fraction=gold_check_fraction,
        rng=rng,
    )
    record.content_hash = digest.hexdigest()
    if not allow_duplicate:
        _refuse_repeat(project=project, content_hash=record.content_hash, exclude=record.pk)
    record.sentences, record.gold_sentences = n_sentences, n_gold
    record.save(update_fields=["sentences", "gold_sentences", "content_hash"])
    _tasks_generate(project=project, record=record, n_tags=len(tag_index), rng=rng)
    return record


@transaction.atomic
def project_create_with_corpus(
    *, owner, project_fields: dict, file: BinaryIO, **corpus_fields
) -> tuple[Project, CorpusImport | ImportJob]:
    """A new project and its first corpus, together or not at all: a file refused at once
    leaves no project behind. A large file becomes a job (see `corpus_upload`): the project
    exists, and fills when the job is done."""
    project = project_create(owner=owner, **project_fields)
    result = corpus_upload(project=project, user=owner, file=file, **corpus_fields)
    return project, result


# Uploads: in the request or as a job ----------------------------------------------------------


def _job_for_key(*, project: Project, key: str) -> ImportJob | None:
    if not key:
        return None
    return ImportJob.objects.filter(project=project, idempotency_key=key).first()


def corpus_upload(
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
    idempotency_key: str = "",
) -> CorpusImport | ImportJob:
    """Import an uploaded corpus: a `CorpusImport` when it was small enough to import at once,
    else a queued `ImportJob` (run by `annotation.tasks.import_run` once this commits).

    A file over a limit, a broken head, or a repeat (unless `allow_duplicate`) is refused before
    anything is stored. The same `idempotency_key` sent again (a client retrying after a
    time-out) returns the first upload's job, or its import, instead of importing twice."""
    _check_request(
        project=project,
        evaluation_fraction=evaluation_fraction,
        gold_check_fraction=gold_check_fraction,
    )
    earlier = _job_for_key(project=project, key=idempotency_key)
    if earlier is not None:
        return earlier.corpus_import if earlier.status == ImportJob.Status.DONE else earlier
    try:
        scan = importers.scan(
            file,
            format=format,
            max_bytes=max_bytes,
            max_sentences=settings.TALLY_MAX_IMPORT_SENTENCES,
        )
    except importers.CorpusError as exc:
        raise InvalidCorpus(as_sentence(str(exc)), line_number=exc.line_number) from exc
    except importers.CorpusTooLarge as exc:
        raise PayloadTooLarge(f"The corpus is larger than {max_bytes} bytes.") from exc
    except importers.CorpusTooManySentences as exc:
        raise _too_large("The file holds", "TALLY_MAX_IMPORT_SENTENCES") from exc
    if format != CorpusImport.Format.TEXT:
        _check_project_room(project=project, adding=scan.sentences)
    if not allow_duplicate:
        _refuse_repeat(project=project, content_hash=scan.content_hash)
        running = ImportJob.objects.filter(
            project=project, content_hash=scan.content_hash, status__in=ImportJob.ACTIVE
        ).first()
        if running is not None:
            raise DuplicateCorpus(
                f"This file is being imported (job {running.pk}). Import it again only if you "
                "mean to: send allow_duplicate=true.",
                fields={"file": [f"Same content as import job {running.pk}."]},
            )
    fields = {
        "filename": filename,
        "format": format,
        "tag_column": tag_column,
        "evaluation_fraction": evaluation_fraction,
        "gold_check_fraction": gold_check_fraction,
        "seed": seed,
        "allow_duplicate": allow_duplicate,
    }
    # Plain text is cut into words by spaCy (about 1 s a megabyte, more on a busy machine): an
    # eighth of the bytes in the request.
    sync_bytes = settings.TALLY_IMPORT_SYNC_BYTES // (
        _TEXT_SYNC_SHARE if format == CorpusImport.Format.TEXT else 1
    )
    small = scan.size <= sync_bytes and scan.sentences <= settings.TALLY_IMPORT_SYNC_SENTENCES
    try:
        with transaction.atomic():
            if small:
                return _import_now(
                    project=project, user=user, file=file, scan=scan, key=idempotency_key, **fields
                )
            return _job_create(
                project=project,
                user=user,
                file=file,
                scan=scan,
                key=idempotency_key,
                max_bytes=max_bytes,
                **fields,
            )
    except IntegrityError:  # the same key, sent twice at once: the other one is the upload
        earlier = _job_for_key(project=project, key=idempotency_key)
        if earlier is None:
            raise
        return earlier.corpus_import if earlier.status == ImportJob.Status.DONE else earlier


def _import_now(*, project, user, file, scan, key, **fields) -> CorpusImport:
    record = corpus_import(
        project=project,
        user=user,
        file=file,
        max_bytes=scan.size,
        **fields,
    )
    now = timezone.now()
    ImportJob.objects.create(
        project=project,
        created_by=user,
        status=ImportJob.Status.DONE,
        idempotency_key=key,
        content_hash=record.content_hash,
        sentences_read=record.sentences,
        sentences_expected=record.sentences,
        corpus_import=record,
        started_at=now,
        finished_at=now,
        **{**fields, "filename": fields["filename"][:255]},
    )
    return record


def _job_create(*, project, user, file, scan, key, max_bytes, **fields) -> ImportJob:
    # The head of the file parsed now (its first sentences, within its first lines): a broken
    # file is refused at once, with its line.
    try:
        head = importers.parse(
            _head(importers.read_lines(file, max_bytes=max_bytes)),
            format=fields["format"],
            tag_column=fields["tag_column"],
            language=project.language,
        )
        for n_read, _ in enumerate(head, start=1):
            if n_read >= _HEAD_SENTENCES:
                break
    except importers.CorpusError as exc:
        raise InvalidCorpus(as_sentence(str(exc)), line_number=exc.line_number) from exc
    finally:
        file.seek(0)
    name = default_storage.save(
        f"imports/project-{project.pk}/{uuid.uuid4().hex}.upload", File(file)
    )
    try:
        job = ImportJob.objects.create(
            project=project,
            created_by=user,
            upload=name,
            idempotency_key=key,
            content_hash=scan.content_hash,
            sentences_expected=scan.sentences,
            **{**fields, "filename": fields["filename"][:255]},
        )
    except IntegrityError:  # the same key sent twice at once: the other upload is the one
        default_storage.delete(name)
        raise
    transaction.on_commit(lambda: _enqueue(job.pk))
    return job


def _enqueue(job_id: int) -> None:
    from annotation.tasks import import_enqueue  # the task module imports this one

    import_enqueue(job_id=job_id)


def import_job_cancel(*, job: ImportJob) -> ImportJob:
    """Ask a queued or running job to stop; it stops at its next batch and leaves nothing.
    A queued job is cancelled at once; a finished one cannot be."""
    if job.status not in ImportJob.ACTIVE:
        raise Conflict(f"This import job is {job.status}; only a queued or running one stops.")
    ImportJob.objects.filter(pk=job.pk).update(cancel_requested=True)
    now = timezone.now()
    ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.QUEUED).update(
        status=ImportJob.Status.CANCELLED, finished_at=now
    )
    job.refresh_from_db()
    if job.status == ImportJob.Status.CANCELLED:
        _upload_delete(job)
    return job


def _upload_delete(job: ImportJob) -> None:
    if job.upload:
        default_storage.delete(job.upload)


def _claim(job_id: int) -> bool:
    now = timezone.now()
    fresh = ImportJob.objects.filter(pk=job_id, status=ImportJob.Status.QUEUED)
    stale = ImportJob.objects.filter(
        pk=job_id, status=ImportJob.Status.RUNNING, heartbeat_at__lt=now - JOB_STALE
    )
    for candidates in (fresh, stale):
        if candidates.update(status=ImportJob.Status.RUNNING, started_at=now, heartbeat_at=now):
            return True
    return False


def _report(job_id: int, n_sentences: int) -> None:
    """Progress and heartbeat; `_Cancelled` if the job was cancelled meanwhile."""
    ImportJob.objects.filter(pk=job_id).update(
        sentences_read=n_sentences, heartbeat_at=timezone.now()
    )
    if ImportJob.objects.filter(pk=job_id, cancel_requested=True).exists():
        raise _Cancelled


def _finish(job_id: int, status: str, **fields) -> None:
    ImportJob.objects.filter(pk=job_id).update(status=status, finished_at=timezone.now(), **fields)


def import_job_run(*, job_id: int) -> str:
    """Run a queued import job (the worker's side): parse the upload into a spool, reporting
    progress, then write it in one transaction. Returns the job's final status; a job another
    worker runs (or that ended) is left alone."""
    if not _claim(job_id):
        return ImportJob.objects.filter(pk=job_id).values_list("status", flat=True).first() or ""
    job = ImportJob.objects.select_related("project").get(pk=job_id)
    try:
        with tempfile.TemporaryFile("w+", encoding="utf-8") as spool:
            n_sentences = _spool(job, spool)
            spool.seek(0)
            with transaction.atomic():
                record = _job_write(job, _unspool(spool), n_sentences)
                _finish(job.pk, ImportJob.Status.DONE, corpus_import=record)
        status = ImportJob.Status.DONE
    except _Cancelled:
        _finish(job.pk, ImportJob.Status.CANCELLED)
        status = ImportJob.Status.CANCELLED
    except DomainError as exc:
        _finish(
            job.pk,
            ImportJob.Status.FAILED,
            error_code=exc.code,
            error=exc.message,
            error_line=getattr(exc, "line_number", None),
        )
        status = ImportJob.Status.FAILED
    except Exception as exc:
        logger.exception("import job failed", extra={"job_id": job.pk})
        _finish(
            job.pk,
            ImportJob.Status.FAILED,
            error_code="server_error",
            error=f"The import stopped on an unexpected error ({type(exc).__name__}).",
        )
        status = ImportJob.Status.FAILED
    _upload_delete(job)
    return status


def _spool(job: ImportJob, spool) -> int:
    tag_index = {name: i for i, name in enumerate(selectors.project_tag_names(project=job.project))}
    n_sentences = 0
    with default_storage.open(job.upload, "rb") as upload:
        for parsed, gold in _parsed(
            upload,
            format=job.format,
            tag_column=job.tag_column,
            language=job.project.language,
            tag_index=tag_index,
            max_bytes=settings.TALLY_MAX_UPLOAD_BYTES,
        ):
            spool.write(
                json.dumps([parsed.tokens, gold, parsed.line_number, parsed.text, parsed.source])
                + "\n"
            )
            n_sentences += 1
            if n_sentences % _PROGRESS_EVERY == 0:
                _report(job.pk, n_sentences)
    _report(job.pk, n_sentences)
    return n_sentences


def _unspool(spool) -> Iterator[tuple[importers.ParsedSentence, list[int] | None]]:
    for line in spool:
        tokens, gold, line_number, text, source = json.loads(line)
        yield importers.ParsedSentence(tokens, None, line_number, text, source), gold


def _job_write(job: ImportJob, sentences, n_sentences: int) -> CorpusImport:
    project = _lock(job.project)
    if project.status == Project.Status.ARCHIVED:
        raise ProjectNotActive("This project is archived.")
    _check_project_room(project=project, adding=n_sentences)
    if not job.allow_duplicate:
        _refuse_repeat(project=project, content_hash=job.content_hash)
    rng = random.Random(job.seed)
    record = CorpusImport.objects.create(
        project=project,
        created_by=job.created_by,
        filename=job.filename,
        format=job.format,
        tag_column=job.tag_column if job.format == CorpusImport.Format.CONLLU else "",
        content_hash=job.content_hash,
    )
    n_written, n_gold = _write(
        project=project,
        record=record,
        sentences=sentences,
        evaluation_fraction=job.evaluation_fraction,
        gold_check_fraction=job.gold_check_fraction,
        rng=rng,
        on_batch=lambda _: _cancel_check(job.pk),
    )
    record.sentences, record.gold_sentences = n_written, n_gold
    record.save(update_fields=["sentences", "gold_sentences"])
    n_tags = len(selectors.project_tag_names(project=project))
    _tasks_generate(project=project, record=record, n_tags=n_tags, rng=rng)
    _cancel_check(job.pk)
    return record


def _cancel_check(job_id: int) -> None:
    """Inside the writing transaction nothing can be reported (it would be rolled back with
    the rows); a cancellation, committed by another request, is looked for at each batch."""
    if ImportJob.objects.filter(pk=job_id, cancel_requested=True).exists():
        raise _Cancelled
