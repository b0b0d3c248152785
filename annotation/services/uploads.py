"""Corpus uploads: imported within the request when small, else as a job a worker runs.

`corpus_upload` is the API's entry: a quick scan (`importers.scan`) refuses a file over a limit
at once (413), a small file is imported within the request (`corpus.corpus_import`), and a large
one becomes an `ImportJob` run by `import_job_run` (the Celery task `annotation.import_run`):
parsed into a spool with its progress reported, then written in one transaction, so a job
cancelled or killed leaves nothing half-imported.
"""

from __future__ import annotations

import itertools
import json
import logging
import random
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import BinaryIO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation import importers, selectors
from annotation.models import CorpusImport, ImportJob, Project
from annotation.services import corpus
from annotation.services.projects import project_create
from common.exceptions import (
    Conflict,
    DomainError,
    DuplicateCorpus,
    ImportQueueFull,
    InvalidCorpus,
    PayloadTooLarge,
    ProjectNotActive,
    TooManyImports,
)
from common.text import as_sentence

logger = logging.getLogger(__name__)

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
    corpus.check_request(
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
        raise corpus.too_large("The file holds", "TALLY_MAX_IMPORT_SENTENCES") from exc
    if format != CorpusImport.Format.TEXT:
        corpus.check_project_room(project=project, adding=scan.sentences)
    if not allow_duplicate:
        corpus.refuse_repeat(project=project, content_hash=scan.content_hash)
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
    record = corpus.corpus_import(
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


def _check_queue_room(*, project: Project, user) -> None:
    """Refuse a new job when its project (409) or the user (429) has as many queued or running
    as allowed (`TALLY_IMPORT_JOBS_PER_PROJECT`, `TALLY_IMPORT_JOBS_PER_USER`): each waits on
    disk until a worker runs it, and one manager's uploads must not hold every other project's
    import back. The rows of the project and the user are locked first, so two uploads at once
    cannot both take the last place."""
    get_user_model().objects.select_for_update().filter(pk=user.pk).exists()
    Project.objects.select_for_update().filter(pk=project.pk).exists()
    active = ImportJob.objects.filter(status__in=ImportJob.ACTIVE)
    per_project = settings.TALLY_IMPORT_JOBS_PER_PROJECT
    waiting = list(active.filter(project=project).order_by("pk").values_list("pk", flat=True))
    if len(waiting) >= per_project:
        raise ImportQueueFull(
            f"This project has {len(waiting)} imports waiting or running (jobs "
            f"{_listed(waiting)}; at most {per_project}, TALLY_IMPORT_JOBS_PER_PROJECT). Send "
            "this file when one of them has finished, or cancel one."
        )
    per_user = settings.TALLY_IMPORT_JOBS_PER_USER
    yours = list(active.filter(created_by=user).order_by("pk").values_list("pk", flat=True))
    if len(yours) >= per_user:
        raise TooManyImports(
            f"You have {len(yours)} imports waiting or running (jobs {_listed(yours)}; at most "
            f"{per_user}, TALLY_IMPORT_JOBS_PER_USER). Send this file when one of them has "
            "finished, or cancel one."
        )


def _listed(ids: list[int]) -> str:
    return ", ".join(str(i) for i in ids)


def _job_create(*, project, user, file, scan, key, max_bytes, **fields) -> ImportJob:
    _check_queue_room(project=project, user=user)
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
    """Progress and heartbeat; `_Cancelled` if the job was cancelled (or its project deleted)
    meanwhile."""
    reported = ImportJob.objects.filter(pk=job_id, cancel_requested=False).update(
        sentences_read=n_sentences, heartbeat_at=timezone.now()
    )
    if not reported:
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
        for parsed, gold in corpus.sentences_parsed(
            upload,
            format=job.format,
            tag_column=job.tag_column,
            language=job.project.language,
            tag_index=tag_index,
            max_bytes=settings.TALLY_MAX_UPLOAD_BYTES,
        ):
            spool.write(
                json.dumps(
                    [
                        parsed.tokens,
                        gold,
                        parsed.line_number,
                        parsed.text,
                        parsed.source,
                        parsed.multiword,
                    ]
                )
                + "\n"
            )
            n_sentences += 1
            if n_sentences % _PROGRESS_EVERY == 0:
                _report(job.pk, n_sentences)
    _report(job.pk, n_sentences)
    return n_sentences


def _unspool(spool) -> Iterator[tuple[importers.ParsedSentence, list[int] | None]]:
    for line in spool:
        tokens, gold, line_number, text, source, multiword = json.loads(line)
        yield importers.ParsedSentence(tokens, None, line_number, text, source, multiword), gold


def _job_write(job: ImportJob, sentences, n_sentences: int) -> CorpusImport:
    project = corpus.project_lock_for_import(job.project)
    if project.status == Project.Status.ARCHIVED:
        raise ProjectNotActive("This project is archived.")
    corpus.check_project_room(project=project, adding=n_sentences)
    if not job.allow_duplicate:
        corpus.refuse_repeat(project=project, content_hash=job.content_hash)
    rng = random.Random(job.seed)
    record = CorpusImport.objects.create(
        project=project,
        created_by=job.created_by,
        filename=job.filename,
        format=job.format,
        tag_column=job.tag_column if job.format == CorpusImport.Format.CONLLU else "",
        content_hash=job.content_hash,
    )
    n_written, n_gold = corpus.sentences_write(
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
    corpus.import_tasks_generate(project=project, record=record, n_tags=n_tags, rng=rng)
    _cancel_check(job.pk)
    return record


def _cancel_check(job_id: int) -> None:
    """Inside the writing transaction nothing can be reported (it would be rolled back with
    the rows); a cancellation (or the project's deletion), committed by another request, is
    looked for at each batch."""
    if not ImportJob.objects.filter(pk=job_id, cancel_requested=False).exists():
        raise _Cancelled
