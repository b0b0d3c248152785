"""The annotator's cycle on PostgreSQL (`annotation.hotpath`, `annotation.kinds`): a lease and
an answer take one statement each, each kind's statement stores exactly what its rules
(`kinds.count.counts_check`, `kinds.verify.verification_check`) accept, and the statements name
the models' tables."""

import random
import re

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from psycopg import _queries as psycopg_queries

from accounts.models import ApiToken
from annotation import hotpath, kinds, scheduler, selectors, services
from annotation.models import (
    Assignment,
    Membership,
    Observation,
    Project,
    Sentence,
    Tag,
    Task,
)
from tests.support.factories import answer, client_for, import_jsonl, make_project, next_task

pytestmark = pytest.mark.postgres

UNKNOWN = "NOT-A-TAG"


def sent_by(annotator, assignment_id: int, idempotency_key: str, seconds=1.0, now=None) -> dict:
    """The parameters every submission statement takes: the annotator's token, their lease."""
    return hotpath.submission_common(
        key=annotator.auth_token.key,
        user_id=None,
        assignment_id=assignment_id,
        idempotency_key=idempotency_key,
        seconds_on_device=seconds,
        now=now or timezone.now(),
    )


def random_counts(rng: random.Random, asked: list[str], others: list[str], length: int) -> dict:
    names = list(asked)
    shape = rng.randrange(6)
    if shape == 1 and names:
        names.remove(rng.choice(names))  # one missing
    elif shape == 2:
        names.append(rng.choice(others))  # a tag of the project not asked
    elif shape == 3:
        names.append(UNKNOWN)
    elif shape == 4:
        names = []
    rng.shuffle(names)
    budget = length
    counts = {}
    for name in names:
        if rng.random() < 0.8:  # mostly within the window, so that many answers are valid
            value = rng.randint(0, budget)
            budget -= value
        else:
            value = rng.choice([-1, length + 1, rng.randint(0, length)])
        counts[name] = value
    return counts


def test_the_statement_stores_exactly_what_the_service_accepts(manager, annotator):
    project = make_project(owner=manager, name="Two tags a task", tags_per_task=2)
    Membership.objects.create(project=project, user=annotator, role=Membership.Role.ANNOTATOR)
    import_jsonl(project, manager, max_bytes=10**6, seed=1)
    lease = scheduler.task_lease_next(project=project, annotator=annotator)
    assert len(lease.tags) == 2
    names = selectors.project_tag_names(project=project)
    asked = [names[i] for i in lease.tags]
    others = [name for name in names if name not in asked]
    rng = random.Random(0)
    outcomes = {True: 0, False: 0}
    for trial in range(400):
        counts = random_counts(rng, asked, others, lease.length)
        _, errors = services.counts_check(counts, names=asked, length=lease.length)
        with transaction.atomic():
            row = kinds.count.submit(
                common=sent_by(annotator, lease.assignment_id, f"k{trial}"),
                names=list(counts),
                counts=list(counts.values()),
            )
            stored = row.id is not None
            if stored:
                observation = Observation.objects.get(pk=row.id)
                assert observation.tags == row.tags == lease.tags
                assert observation.counts == row.counts == [counts[name] for name in asked]
            transaction.set_rollback(True)  # the lease stays unanswered for the next trial
        assert stored == (not errors), counts
        outcomes[stored] += 1
    assert min(outcomes.values()) > 50


def test_the_statement_stores_exactly_what_the_service_accepts_in_a_private_project(
    manager, annotator
):
    """Issue 13: released values with the project's own mechanism parameters, and nothing else;
    their sum is not bounded by the window (each tag's release is drawn on its own)."""
    project = make_project(owner=manager, name="Private", tags_per_task=2, private=True, alpha=2.0)
    Membership.objects.create(project=project, user=annotator, role=Membership.Role.ANNOTATOR)
    import_jsonl(project, manager, max_bytes=10**6, seed=1)
    lease = scheduler.task_lease_next(project=project, annotator=annotator)
    names = selectors.project_tag_names(project=project)
    asked = [names[i] for i in lease.tags]
    others = [name for name in names if name not in asked]
    rng = random.Random(0)
    forms = [
        (True, project.mechanism, 2.0),
        (True, project.mechanism, 2),
        (True, project.mechanism, 3.0),
        (True, "krr", 2.0),
        (True, None, None),
        (False, None, None),
        (False, project.mechanism, 2.0),
    ]
    outcomes = {True: 0, False: 0}
    for trial in range(400):
        counts = random_counts(rng, asked, others, lease.length)
        if rng.random() < 0.3 and set(counts) == set(asked):  # a sum beyond the window
            counts = dict.fromkeys(counts, lease.length)
        released, mechanism, alpha = forms[0] if rng.random() < 0.5 else rng.choice(forms)
        privacy = None if mechanism is None else {"mechanism": mechanism, "alpha": alpha}
        errors = services.privacy_check(project, counts_given=not released, privacy=privacy)
        if not errors:
            _, errors = services.counts_check(
                counts, names=asked, length=lease.length, released=True
            )
        with transaction.atomic():
            row = kinds.count.submit(
                common=sent_by(annotator, lease.assignment_id, f"k{trial}"),
                names=list(counts),
                counts=list(counts.values()),
                released=released,
                mechanism=mechanism,
                alpha=alpha,
            )
            stored = row.id is not None
            if stored:
                observation = Observation.objects.get(pk=row.id)
                assert observation.counts == row.counts == [counts[name] for name in asked]
                assert (observation.mechanism, observation.alpha) == (project.mechanism, 2.0)
                assert (row.mechanism, row.alpha) == (project.mechanism, 2.0)
            transaction.set_rollback(True)
        assert stored == (not errors), (counts, released, privacy)
        outcomes[stored] += 1
    assert min(outcomes.values()) > 50


@pytest.fixture
def statements_run(monkeypatch):
    """Counts the statements a request runs: Django's, and the prepared statements of
    `annotation.hotpath`, which bypass Django's cursor."""
    hand_written = []
    run = hotpath.fetch_row
    monkeypatch.setattr(hotpath, "fetch_row", lambda *a: hand_written.append(a) or run(*a))
    with CaptureQueriesContext(connection) as queries:
        yield lambda: len(queries) + len(hand_written)


def test_a_lease_and_an_answer_are_one_statement_each(project, corpus, annotator, statements_run):
    client = client_for(annotator)
    scheduler.assignments_expire(project=project)  # the periodic reclaim is not due
    before = statements_run()
    response = next_task(client, project)
    assert response.status_code == 200
    assert statements_run() - before == 1
    task = response.json()
    before = statements_run()
    response = answer(client, task)
    assert response.status_code == 201
    assert statements_run() - before == 1
    stored = Observation.objects.get(pk=response.json()["id"])
    assert response.json()["counts"] == dict.fromkeys((t["name"] for t in task["tags"]), 0)
    assert stored.counts == [0] * len(task["tags"])
    assert stored.seconds_on_device == 1.5


def test_an_answer_with_its_next_task_is_one_statement(project, corpus, annotator, statements_run):
    """Issue 29: one request for the answer and the next task, and one statement (one commit)
    for both."""
    client = client_for(annotator)
    scheduler.assignments_expire(project=project)
    task = next_task(client, project).json()
    before = statements_run()
    response = answer(client, task, next={"holding": []})
    assert response.status_code == 201
    assert statements_run() - before == 1
    following = response.json()["next"]
    assert following["assignment"] != task["assignment"]
    assert Assignment.objects.get(pk=following["assignment"]).annotator == annotator
    assert Observation.objects.get(pk=response.json()["id"]).assignment_id == task["assignment"]


def _cycle_state(project, annotator) -> tuple:
    """What a lease changes: the caller's live leases, their lease serial, the open slots."""
    return (
        sorted(
            Assignment.objects.filter(
                project=project, annotator=annotator, status=Assignment.Status.LEASED
            ).values_list("task_id", "expires_at")
        ),
        Membership.objects.get(project=project, user=annotator).lease_serial,
        sorted(Task.objects.filter(project=project).values_list("id", "open_slots")),
    )


def _lease_seen(row, held_before: set[int]):
    """A lease row as both ways must agree on (a new lease's id is the sequence's next)."""
    if row is None or row.assignment_id is None:
        return None
    handed_back = row.assignment_id if row.assignment_id in held_before else "new"
    return (handed_back, row.task_id, row.expires_at, row.kind, row.tags, row.shown_tags)


def test_an_answer_and_its_lease_in_one_statement_do_what_the_two_statements_do_in_turn(
    project, corpus, annotator
):
    """`SUBMIT_AND_LEASE` of each kind against `SUBMIT` and then `NEXT_TASK`, from the same
    state: random answers (in order or not) to random leases, with random leases held, caps,
    draws and reclaim times. The same answer stored (or refused, and then nothing leased), the
    same task leased or lease handed back, and the same state after."""
    _verification_round(project)
    Project.objects.filter(pk=project.pk).update(verification_share=0.5, gold_fraction=0.2)
    project.refresh_from_db()
    now = timezone.now()
    held = []
    for kind_draw in (0.0, 1.0, 1.0):
        held.append(
            scheduler.task_lease_next(
                project=project, annotator=annotator, kind_draw=kind_draw,
                holding=[lease.assignment_id for lease in held], now=now,
            )
        )  # fmt: skip
    assert {lease.kind for lease in held} == {"count", "verify"}
    # One lease has run out: it may still be answered, and is not held.
    Assignment.objects.filter(pk=held[-1].assignment_id).update(
        expires_at=now - timezone.timedelta(seconds=1)
    )
    names = selectors.project_tag_names(project=project)
    key = annotator.auth_token.key
    rng = random.Random(0)
    outcomes = {"stored": 0, "refused": 0, "leased": 0, "handed back": 0, "none": 0}
    for trial in range(160):
        lease = rng.choice(held)
        holding = [x.assignment_id for x in held if rng.random() < 0.6]
        lease_args = dict(
            holding=holding,
            max_leases=rng.choice([1, 2, 3, 4]),
            now=now,
            gold_draw=rng.random(),
            kind_draw=rng.random(),
            reclaim_due_before=now - (scheduler.RECLAIM_INTERVAL if rng.random() < 0.9 else
                                      -scheduler.RECLAIM_INTERVAL),
        )  # fmt: skip
        if lease.kind == "count":
            asked = [names[i] for i in lease.tags]
            others = [name for name in names if name not in asked] or [UNKNOWN]
            counts = random_counts(rng, asked, others, lease.length)
            kind, answer_args = kinds.count, dict(names=list(counts), counts=list(counts.values()))
        else:
            kind = kinds.verify
            answer_args = dict(answer=rng.choice([True, False]), wrong=rng.choice([None, 0, 5]))
        sent = dict(common=sent_by(annotator, lease.assignment_id, f"k{trial}", now=now))
        sent |= answer_args
        held_before = {x.assignment_id for x in held}
        ways = []
        for together in (False, True):
            with transaction.atomic():
                if together:
                    row, next_row = kind.submit(**sent, lease=hotpath.lease_params(**lease_args))
                else:
                    row = kind.submit(**sent)
                    next_row = None
                    if row.id is not None:
                        next_row = hotpath.next_task(
                            key=key,
                            user_id=None,
                            project_id=project.pk,
                            lease=hotpath.lease_params(**lease_args),
                        )
                stored = {f: getattr(row, f) for f in row.__dataclass_fields__ if f != "id"}
                ways.append(
                    (row.id is not None, stored, _lease_seen(next_row, held_before),
                     _cycle_state(project, annotator))
                )  # fmt: skip
                transaction.set_rollback(True)
        assert ways[0] == ways[1], (trial, lease.kind, sent, lease_args)
        was_stored, _, seen, _ = ways[0]
        outcomes["stored" if was_stored else "refused"] += 1
        if was_stored:
            if seen is None:
                outcomes["none"] += 1
            else:
                outcomes["leased" if seen[0] == "new" else "handed back"] += 1
    assert min(outcomes.values()) >= 5, outcomes


STATEMENTS = {
    "lease": hotpath.statements.NEXT_TASK,
    **{f"answer to {name}": kind.SUBMIT for name, kind in kinds.KINDS.items()},
    **{f"answer to {name} and lease": kind.SUBMIT_AND_LEASE for name, kind in kinds.KINDS.items()},
}


def test_psycopg_parses_no_statement_of_the_cycle_on_a_request(
    project, corpus, annotator, monkeypatch
):
    """The statements go with PostgreSQL's own placeholders, worked out once: psycopg would parse
    a statement over 4,096 bytes on every request (that cost the cycle a tenth of its CPU)."""
    client = client_for(annotator)
    scheduler.assignments_expire(project=project)
    next_task(client, project)  # the first time, the statements are worked out

    def parse(*args):
        raise AssertionError("psycopg parsed a statement's placeholders")

    monkeypatch.setattr(psycopg_queries, "_query2pg", parse)
    monkeypatch.setattr(psycopg_queries, "_query2pg_nocache", parse)
    task = next_task(client, project).json()
    response = answer(client, task, next={"holding": [task["assignment"]]})
    assert response.status_code == 201 and response.json()["next"]["assignment"]


def test_the_statements_name_the_models_tables():
    """The statements are written with table names; they are the models' own."""
    text = "".join(STATEMENTS.values())
    ctes = set(re.findall(r"(\w+) AS ?(?:MATERIALIZED ?)?\(", text))
    named = set(re.findall(r"\b(?:FROM|JOIN|UPDATE|INTO)\s+([a-z_]+)\b(?!\s*\()", text)) - ctes
    models = (get_user_model(), ApiToken, Membership, Project, Assignment, Task, Sentence, Tag)
    assert named == {model._meta.db_table for model in (*models, Observation)}


def _verification_round(project):
    """Verification tasks of version 1 on every training sentence, served to everyone."""
    windows = [
        services.VerificationWindow(sentence_id=s.pk, start=0, shown_tags=s.gold_tags[:3])
        for s in Sentence.objects.filter(project=project, split="train")
    ]
    services.verification_round_create(project_id=project.pk, version_number=1, windows=windows)
    Project.objects.filter(pk=project.pk).update(verification_share=1.0)
    project.refresh_from_db()


def test_a_verification_lease_and_answer_are_one_statement_each(
    project, corpus, annotator, statements_run
):
    """Issue 15: the plain case of a verification task is as cheap as a count task's."""
    _verification_round(project)
    client = client_for(annotator)
    scheduler.assignments_expire(project=project)
    before = statements_run()
    task = next_task(client, project).json()
    assert statements_run() - before == 1
    assert task["kind"] == "verify" and task["model_version"] == 1
    before = statements_run()
    body = {"assignment": task["assignment"], "answer": False, "wrong": 2,
            "seconds_on_device": 1.2, "idempotency_key": "v-1"}  # fmt: skip
    response = client.post("/api/observations/", body, format="json")
    assert response.status_code == 201
    assert statements_run() - before == 1
    out = response.json()
    assert (out["kind"], out["answer"], out["wrong"]) == ("verify", False, 2)
    assert out["shown"] == task["shown"] and out["model_version"] == 1
    stored = Observation.objects.get(pk=out["id"])
    assert stored.kind == "verify" and stored.tags == [] and stored.counts == []
    assert stored.shown_tags == Task.objects.get(assignments__pk=task["assignment"]).shown_tags
    assert (stored.answer, stored.wrong, stored.seconds_on_device) == (False, 2, 1.2)
    # The next verification task is the first one ahead of the caller's mark of that kind.
    second = next_task(client, project).json()
    assert second["kind"] == "verify" and second["assignment"] != task["assignment"]


def test_the_verification_statement_stores_exactly_what_the_service_accepts(
    project, corpus, annotator
):
    _verification_round(project)
    lease = scheduler.task_lease_next(project=project, annotator=annotator, kind_draw=0.0)
    assert lease.kind == "verify" and lease.length == 3
    rng = random.Random(0)
    outcomes = {True: 0, False: 0}
    for trial in range(200):
        answer_value = rng.choice([True, False, False])
        wrong = rng.choice([None, None, -1, 0, 1, 2, 3, 7])
        _, errors = services.verification_check(answer_value, wrong, length=lease.length)
        with transaction.atomic():
            row = kinds.verify.submit(
                common=sent_by(annotator, lease.assignment_id, f"k{trial}"),
                answer=answer_value,
                wrong=wrong,
            )
            stored = row.id is not None
            if stored:
                observation = Observation.objects.get(pk=row.id)
                assert (observation.answer, observation.wrong) == (answer_value, wrong)
                assert observation.shown_tags == row.shown_tags == lease.shown_tags
                assert observation.kind == row.kind == "verify"
            transaction.set_rollback(True)
        assert stored == (not errors), (answer_value, wrong)
        outcomes[stored] += 1
    assert min(outcomes.values()) > 30
    # A count task's lease is never answered by the verification statement, nor the reverse.
    count = scheduler.task_lease_next(
        project=project, annotator=annotator, kind_draw=1.0, holding=[lease.assignment_id]
    )
    assert count.kind == "count"
    row = kinds.verify.submit(
        common=sent_by(annotator, count.assignment_id, "x", seconds=None), answer=True, wrong=None
    )
    assert row.id is None
    row = kinds.count.submit(
        common=sent_by(annotator, lease.assignment_id, "y", seconds=None), names=[], counts=[]
    )
    assert row.id is None


def test_a_verification_answer_is_refused_once_the_project_is_private(project, corpus, annotator):
    """A verification lease given before the project became private: its Yes / No would not be
    randomized, so neither the statement nor the service takes it."""
    _verification_round(project)
    lease = scheduler.task_lease_next(project=project, annotator=annotator, kind_draw=0.0)
    assert lease.kind == "verify"
    Project.objects.filter(pk=project.pk).update(private=True, mechanism="krr", alpha=3.0)
    row = kinds.verify.submit(
        common=sent_by(annotator, lease.assignment_id, "v", seconds=None), answer=True, wrong=None
    )
    assert row.id is None
    response = client_for(annotator).post(
        "/api/observations/",
        {"assignment": lease.assignment_id, "answer": True, "idempotency_key": "v"},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"answer": ["Not in a private project."]}
    assert not Observation.objects.exists()


def test_a_used_up_round_leases_a_count_task_in_the_same_statement(
    project, corpus, annotator, statements_run
):
    """Once the caller has had every verification task of the served version, a verification
    draw gets a count task without leaving the one statement."""
    _verification_round(project)
    Task.objects.filter(project=project, kind="verify").update(open_slots=0)
    client = client_for(annotator)
    scheduler.assignments_expire(project=project)
    before = statements_run()
    task = next_task(client, project).json()
    assert statements_run() - before == 1
    assert task["kind"] == "count"
