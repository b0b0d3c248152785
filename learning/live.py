"""The live model: the current batch version stepped by the online learner
(`learning.core.online`) through the count answers stored after it, published at most every
`TALLY_LIVE_MODEL_SECONDS`.

`live_model_update` reads the answers after the row's watermark (at most
`TALLY_LIVE_BLOCK_ANSWERS`), steps the learner (kept in the process between updates, restored
from the stored state when another process published last), writes the model file and the
learner's state, then moves file, state, watermark and counters in ONE conditional row update
(`number` and `base_version` unchanged since the read): a worker killed anywhere before it
leaves the row as it was (at worst orphan files), and of two concurrent updates one publishes
and the other discards its work, so each answer is applied once. A new batch version makes the
row stale; the next update starts again from that version, its newest answers' labels stored
(`OnlineCountTagger.seed`), and the watermark at the version's newest observation.

Verification answers are not consumed here (the batch retrain learns from them). An answer whose
transaction commits after a later id was read is left to the next batch retrain; each point of
the row's curve keeps its update's watermark and, on PostgreSQL, the snapshot its answers were
read in, so that a check can tell those answers from answers skipped (`devtools.faults`).
"""

from __future__ import annotations

import io
import logging
import threading
import uuid

import numpy as np
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection, transaction
from django.utils import timezone

from learning import adapter, selectors
from learning.core.online import OnlineCountTagger
from learning.core.training import TrainingSet
from learning.models import LiveModel, ModelVersion

logger = logging.getLogger(__name__)

SEED_ANSWERS = 20_000  # newest answers of a batch version whose labels start the store
CURVE_POINTS = 200  # progressive-validation points kept on the row

_learners: dict[int, tuple[tuple[int, int], OnlineCountTagger]] = {}
_learners_lock = threading.Lock()


def _new_learner() -> OnlineCountTagger:
    return OnlineCountTagger(random_state=0)


def live_model_reset(*, project_id: int, version: ModelVersion) -> LiveModel:
    """The live model starts again from ``version``: nothing published, the watermark at its
    newest observation. Called by the retrain in its transaction, and by an update that finds
    the row stale."""
    live, _ = LiveModel.objects.update_or_create(
        project_id=project_id,
        defaults={
            "base_version": version.number, "number": 0,
            "watermark": version.newest_observation, "answers_applied": 0, "file": "",
            "state_file": "", "progressive": [], "published_at": None,
        },
    )  # fmt: skip
    with _learners_lock:
        _learners.pop(project_id, None)
    return live


def live_model_update(*, project_id: int, force: bool = False) -> dict:
    """Apply the answers after the watermark and publish (see the module docstring); not
    within `TALLY_LIVE_MODEL_SECONDS` of the last publication unless ``force``. Returns
    ``{"status": ..., ...}``."""
    if settings.TALLY_LIVE_MODEL_SECONDS == 0:
        return {"status": "off"}
    current = selectors.current_version(project_id=project_id)
    if current is None:
        return {"status": "no_model"}
    live = LiveModel.objects.filter(project_id=project_id).first()
    if live is None or live.base_version != current.number:
        live = live_model_reset(project_id=project_id, version=current)
    if not force and live.published_at is not None:
        age = (timezone.now() - live.published_at).total_seconds()
        if age < settings.TALLY_LIVE_MODEL_SECONDS:
            return {"status": "recent", "seconds": age}
    block, tokens, newest, snapshot = _answers_after(project_id=project_id, after=live.watermark)
    if len(block) == 0:
        return {"status": "up_to_date", "number": live.number}
    tagset = adapter.project_tagset(project_id=project_id)
    mechanism = adapter.project_mechanism(project_id=project_id, n_tags=len(tagset))
    learner = _learner_for(project_id=project_id, live=live, current=current, tagset=tagset)
    try:
        learner.partial_fit(TrainingSet(tokens, block, tagset, mechanism=mechanism))
        return _publish(project_id=project_id, live=live, learner=learner, newest=newest,
                        answers=len(block), snapshot=snapshot)  # fmt: skip
    except BaseException:
        with _learners_lock:
            _learners.pop(project_id, None)
        raise


def _answers_after(*, project_id: int, after: int):
    """`adapter.count_answers` after ``after``, plus the snapshot it read them in
    (``pg_current_snapshot()`` as text; "" off PostgreSQL): one REPEATABLE READ transaction, so
    that the snapshot is the one every read of the block saw."""
    if connection.vendor != "postgresql":
        return *_read_block(project_id, after), ""
    outermost = not connection.in_atomic_block  # else the caller's transaction (tests) sets it
    with transaction.atomic():
        with connection.cursor() as cursor:
            if outermost:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cursor.execute("SELECT pg_current_snapshot()::text")
            snapshot = cursor.fetchone()[0]
        return *_read_block(project_id, after), snapshot


def _read_block(project_id: int, after: int):
    return adapter.count_answers(
        project_id=project_id, after=after, limit=settings.TALLY_LIVE_BLOCK_ANSWERS
    )


def _learner_for(*, project_id: int, live: LiveModel, current: ModelVersion, tagset):
    """This process's learner if it made the row's last publication, else one restored from the
    row's state (or, before the first, seeded from the batch version)."""
    with _learners_lock:
        cached = _learners.pop(project_id, None)
    if cached is not None and cached[0] == (live.base_version, live.number):
        return cached[1]
    if live.number == 0:
        seed, tokens, _ = adapter.count_answers(
            project_id=project_id, after=0, up_to=live.watermark, limit=SEED_ANSWERS,
            newest_first=True,
        )  # fmt: skip
        tagger = selectors.tagger_of(version=current)
        if len(seed) == 0:
            learner = _new_learner()
            learner._start(tagger, tuple(tagset))
            return learner
        mechanism = adapter.project_mechanism(project_id=project_id, n_tags=len(tagset))
        return _new_learner().seed(TrainingSet(tokens, seed, tagset, mechanism=mechanism), tagger)
    with default_storage.open(live.state_file, "rb") as handle:
        state = dict(np.load(io.BytesIO(handle.read()), allow_pickle=False))
    tokens = adapter.sentence_tokens(project_id=project_id, ids=state["sentence"])
    tagger = adapter.model_load(live.file)
    return _new_learner().restore(state, tagger, tokens)


def _publish(
    *, project_id: int, live: LiveModel, learner, newest: int, answers: int, snapshot: str
) -> dict:
    number = live.number + 1
    stem = f"live/project-{project_id}/v{live.base_version}-{number}-{uuid.uuid4().hex[:8]}"
    model_name = default_storage.save(
        stem + ".npz",
        ContentFile(
            adapter.model_dump(
                learner.tagger_,
                metadata={"project": project_id, "version": live.base_version, "live": number},
            )
        ),
    )
    buffer = io.BytesIO()
    np.savez(buffer, **learner.state())  # compressed: 4 MB instead of 22, but 0.15 s of each update
    state_name = default_storage.save(stem + ".state.npz", ContentFile(buffer.getvalue()))
    point = {
        key: learner.progressive_[-1][key] for key in ("answers", "log_likelihood", "count_error")
    }
    point |= {"answers": live.answers_applied + answers, "watermark": newest, "snapshot": snapshot}
    with transaction.atomic():
        published = LiveModel.objects.filter(
            project_id=project_id, base_version=live.base_version, number=live.number
        ).update(
            number=number, watermark=newest, answers_applied=live.answers_applied + answers,
            file=model_name, state_file=state_name,
            progressive=(live.progressive + [point])[-CURVE_POINTS:],
            published_at=timezone.now(),
        )  # fmt: skip
        if published == 1:
            old = [name for name in (live.file, live.state_file) if name]
            transaction.on_commit(lambda: _delete(old))
    if published != 1:
        _delete([model_name, state_name])
        logger.info("live model update discarded: superseded", extra={"project_id": project_id})
        return {"status": "superseded"}
    with _learners_lock:
        _learners[project_id] = ((live.base_version, number), learner)
    return {"status": "published", "number": number, "answers": answers, "watermark": newest}


def _delete(names: list[str]) -> None:
    for name in names:
        default_storage.delete(name)
