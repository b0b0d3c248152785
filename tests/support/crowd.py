"""A toy language and a crowd that answers its tasks through the annotation services.

The language has determiners, adjectives, nouns and verbs: fast to learn (every fit takes well
under a second).
"""

import random
import uuid

import numpy as np

from annotation import scheduler, selectors, services
from annotation.models import Project, Sentence
from tests.support.factories import import_jsonl, jsonl, make_project, member

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


def toy_project(owner, sentences: int = 80):
    """A project of the toy language: `sentences` gold-tagged sentences (a quarter held out for
    evaluation), windows of 3 words, every tag asked, 3 answers a task."""
    project = make_project(owner=owner, name="Toy", window_size=3, redundancy=3, tags_per_task=None)
    import_corpus(project, owner, toy_sentences(sentences))
    return project


def import_corpus(
    project: Project, user, sentences, evaluation_fraction=0.25, seed=1, gold_check_fraction=0.0
):
    return import_jsonl(
        project,
        user,
        jsonl(sentences),
        filename="toy.jsonl",
        evaluation_fraction=evaluation_fraction,
        gold_check_fraction=gold_check_fraction,
        max_bytes=10**7,
        seed=seed,
    )


def tag_names(project: Project) -> list[str]:
    """The project's tag names in its tag order (a lease names tags by their position)."""
    return list(project.tags.order_by("position").values_list("name", flat=True))


def true_counts(names: list[str], lease) -> dict[str, int]:
    gold = Sentence.objects.get(pk=lease.sentence_id).gold_tags
    window = gold[lease.start : lease.start + lease.length]
    return {names[k]: sum(1 for g in window if g == k) for k in lease.tags}


def random_counts(names: list[str], lease, rng: random.Random) -> dict[str, int]:
    left, counts = lease.length, {}
    for k in lease.tags:
        counts[names[k]] = rng.randint(0, left)
        left -= counts[names[k]]
    return counts


def released(mechanism, lease, counts: dict[str, int], rng: random.Random) -> dict[str, int]:
    """`counts` randomized as a phone of a private project does (the task's release
    distribution, drawn with `rng`)."""
    release = mechanism.channel(lease.length, len(lease.tags)).T
    draw = np.random.default_rng(rng.getrandbits(32))
    return {name: int(draw.choice(lease.length + 1, p=release[n])) for name, n in counts.items()}


def true_verification(lease) -> dict:
    """The truthful answer to a verification task: Yes iff every shown tag is the gold one, and
    after a No the first wrong word."""
    gold = Sentence.objects.get(pk=lease.sentence_id).gold_tags
    window = gold[lease.start : lease.start + lease.length]
    wrong = [j for j, (g, s) in enumerate(zip(window, lease.shown_tags, strict=True)) if g != s]
    return {"answer": not wrong, "wrong": wrong[0] if wrong else None}


def model_counts(tagger, names, lease) -> dict[str, int]:
    """The served model's expected counts of the leased window, rounded: what an annotator who
    reads them off predict gives back (kept within the window's length)."""
    tokens = Sentence.objects.get(pk=lease.sentence_id).tokens
    proba = tagger.token_proba([tokens])[lease.start : lease.start + lease.length]
    expected = proba.sum(axis=0)
    counts = {k: int(np.rint(expected[k])) for k in lease.tags}
    while sum(counts.values()) > lease.length:
        counts[max(counts, key=lambda k: counts[k] - expected[k])] -= 1
    return {names[k]: n for k, n in counts.items()}


def answer_tasks(
    project, annotators, n, *, spammers=(), yes_sayers=(), copiers=(), copy_from=None, seed=0
) -> int:
    """`n` answers, round-robin over `annotators`, through the scheduler and the submit service
    (exact counts and truthful verification answers; uniformly random ones from `spammers`;
    Yes to every verification task from `yes_sayers`; the expected counts of the tagger
    `copy_from` from `copiers`; in a private project, counts released by its mechanism as the
    phone does). Returns how many were stored."""
    rng = random.Random(seed)
    names = tag_names(project)
    mechanism = selectors.project_mechanism(project=project)
    stored = 0
    for i in range(n):
        annotator = annotators[i % len(annotators)]
        lease = scheduler.task_lease_next(project=project, annotator=annotator, rng=rng)
        if lease is None:
            continue
        if lease.kind == "verify":
            if annotator in yes_sayers:
                answer = {"answer": True, "wrong": None}
            elif annotator in spammers:
                answer = {"answer": rng.random() < 0.5, "wrong": None}
            else:
                answer = true_verification(lease)
            services.observation_submit(
                annotator=annotator,
                assignment_id=lease.assignment_id,
                idempotency_key=uuid.uuid4().hex,
                seconds_on_device=rng.uniform(1, 3),
                **answer,
            )
            stored += 1
            continue
        if annotator in spammers:
            counts = random_counts(names, lease, rng)
        elif annotator in copiers:
            counts = model_counts(copy_from, names, lease)
        else:
            counts = true_counts(names, lease)
        answer = {"counts": counts}
        if mechanism is not None:
            answer = {
                "released": released(mechanism, lease, counts, rng),
                "privacy": {"mechanism": mechanism.name, "alpha": mechanism.alpha},
            }
        services.observation_submit(
            annotator=annotator,
            assignment_id=lease.assignment_id,
            idempotency_key=uuid.uuid4().hex,
            seconds_on_device=rng.uniform(2, 6),
            **answer,
        )
        stored += 1
    return stored


def add_annotators(project, n, prefix="ann"):
    return [member(project, username=f"{prefix}{project.pk}-{i}") for i in range(n)]
