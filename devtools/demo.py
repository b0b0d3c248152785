"""The demo project that `./tally up` makes on a laptop: UD English EWT, two accounts, and a
simulated crowd that has already answered a first batch, so a first model and report exist.

Everything goes through the same services a real project uses (import, scheduler, submission,
retrain). Running it again reuses what is there. It refuses to run in production.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured

from accounts import services as account_services
from annotation import scheduler, services
from annotation.models import Project, Sentence
from devtools.seeding import conllu_import
from learning import selectors
from learning.experiments.simulate import simulated_answer
from learning.models import RetrainRun
from learning.tasks import retrain_and_push

DEMO_PROJECT_NAME = "EWT part of speech (demo)"
CORPUS = Path(settings.BASE_DIR) / "data" / "ud-english-ewt" / "en_ewt-ud-train.conllu.gz"
# The simulated crowd: mostly careful people, one careless, one who answers at random.
CROWD_KINDS = ("exact",) * 6 + ("noisy", "spammer")


@dataclass(frozen=True)
class DemoLogins:
    manager_username: str
    manager_password: str
    annotator_username: str
    annotator_password: str


@dataclass(frozen=True)
class Demo:
    project_id: int
    invite_code: str
    logins: DemoLogins
    observations: int
    model_version: int | None


def _logins() -> DemoLogins:
    """Random passwords made on the first run and kept (owner-only) next to the local data."""
    path = Path(settings.DATA_DIR) / "demo-logins.json"
    if path.exists():
        return DemoLogins(**json.loads(path.read_text()))
    logins = DemoLogins("manager", secrets.token_urlsafe(9), "annotator", secrets.token_urlsafe(9))
    path.write_text(json.dumps(asdict(logins)))
    path.chmod(0o600)
    return logins


def _user(username: str, password: str):
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        user = account_services.user_register(username=username, password=password)
    return user


def _crowd_answers(project: Project, n_answers: int, seed: int) -> int:
    """Simulated annotators answer `n_answers` tasks the scheduler serves them."""
    rng = np.random.default_rng(seed)
    crowd = [
        _user(f"crowd-{i + 1:02d}-{kind}", secrets.token_urlsafe(16))
        for i, kind in enumerate(CROWD_KINDS)
    ]
    for member in crowd:
        services.membership_join(user=member, code=project.invite_code)
    gold = dict(Sentence.objects.filter(project=project).values_list("id", "gold_tags").iterator())
    names = list(project.tags.order_by("position").values_list("name", flat=True))
    n_tags = len(names)
    answered = 0
    for i in range(n_answers):
        member, kind = crowd[i % len(crowd)], CROWD_KINDS[i % len(crowd)]
        lease = scheduler.task_lease_next(project=project, annotator=member)
        if lease is None:
            break
        window = gold[lease.sentence_id][lease.start : lease.start + lease.length]
        true_counts = np.bincount(window, minlength=n_tags)
        mask = np.zeros(n_tags, dtype=bool)
        mask[lease.tags] = True
        answer = simulated_answer(kind, true_counts, mask, lease.length, rng)
        services.observation_submit(
            annotator=member,
            assignment_id=lease.assignment_id,
            counts={names[t]: int(answer[t]) for t in lease.tags},
            idempotency_key=str(uuid.uuid4()),
            seconds_on_device=float(rng.uniform(2, 9)),
        )
        answered += 1
    return answered


def demo_seed(
    *,
    n_sentences: int = 3000,
    n_answers: int = 3000,
    seed: int = 0,
    log: Callable[[str], None] = print,
) -> Demo:
    """Make (or find) the demo project and make sure it has a first model."""
    if settings.PRODUCTION:
        raise ImproperlyConfigured("The demo is for local development, not production.")
    logins = _logins()
    manager = _user(logins.manager_username, logins.manager_password)
    annotator = _user(logins.annotator_username, logins.annotator_password)
    project = Project.objects.filter(owner=manager, name=DEMO_PROJECT_NAME).first()
    if project is not None and not project.sentences.exists():
        project.delete()  # stopped between creating the project and importing its corpus
        project = None
    if project is None:
        log(f"making the demo project from {n_sentences} sentences of UD English EWT…")
        project = services.project_create(
            owner=manager,
            name=DEMO_PROJECT_NAME,
            description="Universal POS tags on UD English EWT (CC BY-SA 4.0).",
            tag_preset="ud_upos",
            window_size=5,
            tags_per_task=2,
            redundancy=1,
            gold_fraction=0.05,
        )
        conllu_import(
            project, manager, CORPUS, sentences=n_sentences, evaluation_fraction=0.1,
            gold_check_fraction=0.05, seed=seed,
        )  # fmt: skip
        services.membership_join(user=annotator, code=project.invite_code)
    if selectors.current_version(project_id=project.pk) is None:
        # A first run stopped (Ctrl-C) while the crowd answered resumes here, not with a demo of
        # the few answers given before the stop.
        given = project.observations.count()
        if given < n_answers:
            more = f" more (of {n_answers})" if given else ""
            log(f"a simulated crowd of {len(CROWD_KINDS)} answers {n_answers - given} tasks{more}…")
            _crowd_answers(project, n_answers - given, seed + given)
        log("training the first model…")
        retrain_and_push(project_id=project.pk, trigger=RetrainRun.Trigger.MANUAL)
    current = selectors.current_version(project_id=project.pk)
    return Demo(
        project_id=project.pk,
        invite_code=project.invite_code,
        logins=logins,
        observations=project.observations.count(),
        model_version=current.number if current else None,
    )
