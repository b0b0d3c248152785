"""A version's count round and task mix (issue 25), through the retrain: the round the values
chose replaces the never-leased tasks in serving order, and the automatic mix follows value per
second unless the manager fixed a share."""

import numpy as np
import pytest

from annotation import scheduler
from annotation.models import Assignment, Project, Sentence, Task, TaskOrigin
from annotation.services import VerificationWindow
from learning import adapter, rounds
from learning.core.report import TokenProbabilities
from learning.core.task_value import EXPLORATION
from learning.core.verification import VerificationAnswers
from learning.verification import round_windows
from tests.support.crowd import answer_tasks
from tests.support.factories import member
from tests.support.learning import retrain

pytestmark = pytest.mark.django_db


def training(project):
    rows = Sentence.objects.filter(project=project, split="train").order_by("position")
    return [(sentence_id, tokens) for sentence_id, tokens in rows.values_list("id", "tokens")]


def region(task):
    return (task.sentence_id, task.start, task.length, list(task.tags))


def _answered(project, sentences):
    data = adapter.training_data_load(project_id=project.pk, excluded_annotators=set())
    return rounds.answered_rows([data.fit, data.held_out], data.sentence_ids, sentences)


def test_a_version_replaces_the_never_leased_tasks_by_its_round_in_serving_order(project, crowd):
    answer_tasks(project, crowd, 120)
    live = scheduler.task_lease_next(project=project, annotator=crowd[1])  # held, unanswered
    before = set(Task.objects.filter(project=project, kind="count").values_list("id", flat=True))
    leased = set(Assignment.objects.filter(project=project).values_list("task_id", flat=True))
    assert live.task_id in leased and before - leased  # some tasks were never leased

    outcome = retrain(project)

    remaining = set(Task.objects.filter(project=project, kind="count").values_list("id", flat=True))
    assert before & remaining == before & leased  # the never-leased ones, and only they, went
    project.refresh_from_db()
    new = Task.objects.filter(project=project, kind="count", round=project.task_rounds)
    assert set(new.values_list("id", flat=True)) == remaining - before
    # The same plan, recomputed from the stored version: the ids follow its order.
    tagger = adapter.model_load(outcome.version.file.name)
    sentences = training(project)
    asked = adapter.asked_regions(
        project_id=project.pk,
        sentence_index={sentence_id: i for i, (sentence_id, _) in enumerate(sentences)},
        n_tags=4,
    )
    plan = rounds.count_round(
        TokenProbabilities.of(tagger, [tokens for _, tokens in sentences]),
        sentences,
        window=project.window_size,
        tags_per_task=project.tags_per_task,
        asked=asked,
        verification=None,
        seconds=None,
        random_state=outcome.version.number,
        answered=_answered(project, sentences),
    )
    stayed = {str(region(task)) for task in Task.objects.filter(pk__in=before & remaining)}
    expected = [task for task in plan.tasks if str(region(task)) not in stayed]
    assert [region(task) for task in new.order_by("id")] == [region(task) for task in expected]
    assert [task.origin for task in new.order_by("id")] == [task.origin for task in expected]
    assert len(plan.tasks) == len(sentences)  # one task a training sentence, as a uniform round
    uniform = sum(task.origin == TaskOrigin.UNIFORM for task in plan.tasks)
    n = len(plan.tasks)  # each row uniform with probability EXPLORATION: within 4 sd
    assert abs(uniform - EXPLORATION * n) <= 4 * (n * EXPLORATION * (1 - EXPLORATION)) ** 0.5 + 1
    assert "count_round" in outcome.version.timings

    # A newcomer gets the count tasks still open (lower ids) first, then the round in its order.
    Project.objects.filter(pk=project.pk).update(verification_share=0.0)  # counts only, here
    project.refresh_from_db()
    newcomer = member(project)
    still_open = Task.objects.filter(pk__in=before & remaining, open_slots__gt=0, is_gold=False)
    expected = [*still_open.order_by("id"), *new.order_by("id")[:3]]
    served = []
    for _ in expected:
        got = scheduler.task_lease_next(project=project, annotator=newcomer, holding=[])
        Assignment.objects.filter(pk=got.assignment_id).update(status="submitted")
        served.append(got.task_id)
    assert served == [task.pk for task in expected]


def test_the_answers_in_hand_are_one_per_region_on_the_training_sentences(project, crowd):
    answer_tasks(project, crowd, 120)
    sentences = training(project)
    rows = _answered(project, sentences)
    assert rows.shape[1] == 3 + 2 * 4 and 0 < len(rows) <= 120
    regions = {tuple(row[:7]) for row in rows.tolist()}
    assert len(regions) == len(rows)  # a region answered twice: once
    lengths = [len(tokens) for _, tokens in sentences]
    assert all(row[1] + row[2] <= lengths[row[0]] for row in rows.tolist())
    assert (rows[:, 7:].sum(axis=1) <= rows[:, 2]).all()  # counts within their window


def _mix(tagger, project, windows, seconds):
    sentences = training(project)
    return rounds.count_round(
        TokenProbabilities.of(tagger, [tokens for _, tokens in sentences]),
        sentences,
        window=project.window_size,
        tags_per_task=project.tags_per_task,
        asked=np.zeros((0, 7), dtype=np.int64),
        verification=windows,
        seconds=seconds,
        random_state=1,
    ).verification_share_auto


def test_the_automatic_mix_follows_value_per_second_and_a_fixed_share_wins(project, crowd):
    answer_tasks(project, crowd, 120)
    outcome = retrain(project)
    project.refresh_from_db()
    assert project.verification_share is None  # a new project's mix is automatic
    tagger = adapter.model_load(outcome.version.file.name)
    served = [(s, tokens, False) for s, tokens in training(project)]
    served_probs = TokenProbabilities.of(tagger, [tokens for _, tokens, _ in served])
    windows = round_windows(served_probs, served, window=project.window_size, random_state=1)
    n = rounds.MIN_TIMED_ANSWERS
    shares = [
        _mix(tagger, project, windows, {"count": (6.0, n), "verify": (seconds, n)})
        for seconds in (0.01, 1.0, 6.0, 600.0)
    ]
    # Cheaper verification answers buy more bits a second: the share never falls as they get
    # cheaper.
    assert shares == sorted(shares, reverse=True)
    assert shares[0] > shares[-1]
    # Too few timed answers: the priors stand in.
    assert _mix(tagger, project, windows, {"count": (6.0, 1), "verify": (600.0, 1)}) == _mix(
        tagger, project, windows, None
    )

    # What the version stored is what the leases use, unless the manager fixed a share.
    Project.objects.filter(pk=project.pk).update(verification_share_auto=1.0)
    project.refresh_from_db()
    assert project.verification_share_served == 1.0
    automatic = scheduler.task_lease_next(project=project, annotator=crowd[0], kind_draw=0.99)
    assert automatic.kind == "verify"
    Project.objects.filter(pk=project.pk).update(verification_share=0.0)
    project.refresh_from_db()
    fixed = scheduler.task_lease_next(project=project, annotator=crowd[2], kind_draw=0.0)
    assert fixed.kind == "count"


def test_a_fixed_share_keeps_its_verification_round_and_zero_asks_none(project, crowd):
    Project.objects.filter(pk=project.pk).update(verification_share=0.0)
    answer_tasks(project, crowd, 120)
    retrain(project)
    project.refresh_from_db()
    assert project.verification_version is None and project.verification_share_auto == 0.0
    assert Task.objects.filter(project=project, origin=TaskOrigin.VALUE).exists()


def _synthetic_share(probs, sentences, *, window: int, **in_hand) -> float:
    """The automatic mix of a round over `sentences` with one verification window at the start of
    each, given the answers `in_hand` (count_round's `answered` / `verified`)."""
    windows = [
        VerificationWindow(sentence_id=sentence_id, start=0, shown_tags=[0] * window)
        for sentence_id, _ in sentences
    ]
    n_tags = probs.probs.shape[1]
    return rounds.count_round(
        probs, sentences, window=window, tags_per_task=2,
        asked=np.zeros((0, 3 + n_tags), dtype=np.int64), verification=windows,
        seconds=None, random_state=0, **in_hand,
    ).verification_share_auto  # fmt: skip


def test_the_mix_values_verification_given_the_answers_in_hand():
    """Windows whose every word an answer settled are worth no verification: the counts are
    valued on the same probabilities, so the mix does not lean to the kind valued without them."""
    rng = np.random.default_rng(0)
    n_tags, window = 4, 3
    sentences = [(100 + i, [f"w{i}_{j}" for j in range(6)]) for i in range(20)]
    probs = TokenProbabilities(
        probs=rng.dirichlet(np.ones(n_tags), size=120), offsets=np.arange(0, 120, 6)
    )
    gold = rng.integers(0, n_tags, size=120)
    # One word at a time, all tags asked: each answer settles its word's tag.
    settled = np.array(
        [[i, j, 1, *([1] * n_tags), *np.eye(n_tags, dtype=int)[gold[6 * i + j]]]
         for i in range(20) for j in range(window)]
    )  # fmt: skip

    assert _synthetic_share(probs, sentences, window=window) > 0
    assert _synthetic_share(probs, sentences, window=window, answered=settled) == 0.0


def test_verification_answers_in_hand_settle_what_a_round_values():
    """A Yes on every word of the training sentences leaves no count worth asking by value and
    no verification worth its seconds; answers on sentences outside the round are left out."""
    rng = np.random.default_rng(1)
    n_tags, window = 4, 3
    sentences = [(200 + i, [f"v{i}_{j}" for j in range(3)]) for i in range(10)]
    probs = TokenProbabilities(
        probs=rng.dirichlet(np.ones(n_tags), size=30), offsets=np.arange(0, 30, 3)
    )
    # The answers index the project's sentences: the round's ten, reversed, and one more (99).
    sentence_ids = np.array([99, *[200 + i for i in reversed(range(10))]])
    shown = probs.probs.argmax(axis=1).reshape(10, 3)
    answers = VerificationAnswers.create(
        sentence=np.arange(11), start=np.zeros(11, dtype=np.int64),
        shown=np.vstack([[0, 0, 0], shown[::-1]]), answer=np.ones(11, dtype=bool),
        sentence_lengths=np.full(11, 3), n_tags=n_tags,
    )  # fmt: skip
    verified = rounds.verified_answers(answers, sentence_ids, sentences)
    assert len(verified) == 10
    assert verified.sentence.tolist() == list(reversed(range(10)))
    assert (verified.shown == shown[verified.sentence]).all()
    assert rounds.verified_answers(None, sentence_ids, sentences) is None

    assert _synthetic_share(probs, sentences, window=window) > 0
    assert _synthetic_share(probs, sentences, window=window, verified=verified) == 0.0
