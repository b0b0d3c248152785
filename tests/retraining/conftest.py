"""Fixtures of the retraining tests: personas, a small gold-tagged project, a crowd that answers
its tasks through the annotation services, real local HTTP receivers and real Celery workers.

Data: a toy language of determiners, adjectives, nouns and verbs (fast to learn: every fit takes
well under a second), 60 training sentences and 20 evaluation sentences.
"""

import io
import json
import random
import uuid

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from annotation import scheduler, services
from annotation.models import Membership, Project, Sentence
from tests.annotation.factories import TAGS, UserFactory, make_project

LEXICON = {
    "DET": ["the", "a", "every", "this", "that"],
    "ADJ": ["big", "small", "red", "old", "happy", "green", "tall"],
    "NOUN": ["dog", "cat", "man", "car", "tree", "bird", "book", "child", "house", "river"],
    "VERB": ["runs", "sees", "eats", "likes", "finds", "walks", "reads", "sings"],
}
PATTERNS = [
    ["DET", "NOUN", "VERB"],
    ["DET", "ADJ", "NOUN", "VERB"],
    ["DET", "NOUN", "VERB", "DET", "NOUN"],
    ["DET", "ADJ", "NOUN", "VERB", "DET", "ADJ", "NOUN"],
    ["NOUN", "VERB", "DET", "NOUN"],
]


def toy_sentences(n: int, seed: int = 0) -> list[tuple[list[str], list[str]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        tags = rng.choice(PATTERNS)
        out.append(([rng.choice(LEXICON[t]) for t in tags], list(tags)))
    return out


def jsonl(sentences) -> bytes:
    return "".join(json.dumps({"tokens": t, "tags": g}) + "\n" for t, g in sentences).encode()


def import_corpus(project: Project, user, sentences, evaluation_fraction=0.25, seed=1):
    return services.corpus_import(
        project=project,
        user=user,
        file=io.BytesIO(jsonl(sentences)),
        filename="toy.jsonl",
        format="jsonl",
        evaluation_fraction=evaluation_fraction,
        max_bytes=10**7,
        seed=seed,
    )


def true_counts(project: Project, lease) -> dict[str, int]:
    names = [t["name"] for t in TAGS]
    gold = Sentence.objects.get(pk=lease.sentence_id).gold_tags
    window = gold[lease.start : lease.start + lease.length]
    return {names[k]: sum(1 for g in window if g == k) for k in lease.tags}


def random_counts(project: Project, lease, rng: random.Random) -> dict[str, int]:
    names = [t["name"] for t in TAGS]
    left, counts = lease.length, {}
    for k in lease.tags:
        counts[names[k]] = rng.randint(0, left)
        left -= counts[names[k]]
    return counts


def answer_tasks(project, annotators, n, *, spammers=(), seed=0) -> int:
    """`n` answers, round-robin over `annotators`, through the scheduler and the submit service
    (exact counts; uniformly random ones from `spammers`). Returns how many were stored."""
    rng = random.Random(seed)
    stored = 0
    for i in range(n):
        annotator = annotators[i % len(annotators)]
        lease = scheduler.task_lease_next(project=project, annotator=annotator, rng=rng)
        if lease is None:
            continue
        counts = (
            random_counts(project, lease, rng)
            if annotator in spammers
            else true_counts(project, lease)
        )
        services.observation_submit(
            annotator=annotator,
            assignment_id=lease.assignment_id,
            counts=counts,
            idempotency_key=uuid.uuid4().hex,
            seconds_on_device=rng.uniform(2, 6),
        )
        stored += 1
    return stored


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    cache.clear()


@pytest.fixture
def manager(db):
    return UserFactory(username="manager")


@pytest.fixture
def project(manager):
    project = make_project(
        owner=manager, name="Toy", window_size=3, redundancy=3, tags_per_task=None
    )
    import_corpus(project, manager, toy_sentences(80))
    return project


def add_annotators(project, n, prefix="ann"):
    users = []
    for i in range(n):
        user = UserFactory(username=f"{prefix}{project.pk}-{i}")
        Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
        users.append(user)
    return users


@pytest.fixture
def crowd(project):
    return add_annotators(project, 4)


@pytest.fixture
def annotator(crowd):
    return crowd[0]


@pytest.fixture
def other_project():
    return make_project(owner=UserFactory(username="other_manager"), name="Other")


@pytest.fixture
def outsider(other_project):
    user = UserFactory(username="outsider")
    Membership.objects.create(project=other_project, user=user, role=Membership.Role.ANNOTATOR)
    return user


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {user.auth_token.key}")
    return client


@pytest.fixture
def personas(manager, annotator, outsider):
    return {
        "manager": client_for(manager),
        "annotator": client_for(annotator),
        "outsider": client_for(outsider),
        "anonymous": client_for(None),
    }
