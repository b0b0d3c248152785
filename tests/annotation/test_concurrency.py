"""One region, many requests at once, on PostgreSQL: the scheduler and the submission service
called from threads with their own connections, then the annotator's two endpoints through a real
server (pytest-django's live server: a thread and a database connection per request), so that
the statements the API really runs race each other: the one-statement lease and submission, and
the scheduler's path when a lease reclaim is due."""

import io
import threading
import time
from datetime import timedelta
from unittest import mock

import httpx
import pytest
from django.db import connection, transaction
from django.utils import timezone

from annotation import scheduler, services
from annotation.models import Assignment, Observation, Project, Task
from common.exceptions import InvalidInput
from tests.support.factories import UserFactory, annotators, make_project, member

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


# The scheduler and the service, called at once ----------------------------------------------


def run_concurrently(functions):
    barrier = threading.Barrier(len(functions))
    errors = []

    def runner(fn):
        try:
            barrier.wait()
            fn()
        except Exception as exc:  # noqa: BLE001 - collected and re-raised in the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=runner, args=(fn,)) for fn in functions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors


def test_simultaneous_requests_never_exceed_redundancy():
    manager = UserFactory()
    project = make_project(owner=manager, redundancy=2, tags_per_task=1)
    services.corpus_import(
        project=project,
        user=manager,
        file=io.BytesIO(b"a b c d e\nf g h i j\n"),
        format="tokenized",
        max_bytes=1000,
        seed=0,
    )
    users = annotators(project, 12)
    Task.objects.filter(project=project).update(open_slots=2)
    # Forbid new rounds, so that everybody competes for the same 2 tasks x 2 slots.
    results = []
    with mock.patch.object(scheduler, "tasks_replenish", return_value=False):
        run_concurrently(
            [
                lambda user=user: results.append(
                    scheduler.task_lease_next(project=project, annotator=user)
                )
                for user in users
            ]
        )
    leased = [a for a in results if a is not None]
    assert 1 <= len(leased) <= 4  # 2 tasks x redundancy 2; SKIP LOCKED may turn some away
    per_task = {}
    for assignment in Assignment.objects.all():
        per_task[assignment.task_id] = per_task.get(assignment.task_id, 0) + 1
    assert max(per_task.values()) <= 2
    assert len(leased) == Assignment.objects.count()
    open_slots = sum(Task.objects.values_list("open_slots", flat=True))
    assert open_slots + len(leased) == 4


def test_one_annotator_submitting_the_same_answer_twice_at_once():
    manager = UserFactory()
    project = make_project(owner=manager)
    services.corpus_import(
        project=project, user=manager, file=io.BytesIO(b"a b c\n"), format="tokenized", max_bytes=99
    )
    user = member(project)
    lease = scheduler.task_lease_next(project=project, annotator=user)
    counts = {["NOUN", "VERB", "DET", "ADJ"][i]: 0 for i in lease.tags}
    outcomes = []
    run_concurrently(
        [
            lambda: outcomes.append(
                services.observation_submit(
                    annotator=user,
                    assignment_id=lease.assignment_id,
                    counts=counts,
                    idempotency_key="same",
                )
            )
            for _ in range(6)
        ]
    )
    assert len(outcomes) == 6
    assert len({observation.pk for observation, _ in outcomes}) == 1
    assert sum(not replayed for _, replayed in outcomes) == 1


# The API, called at once ------------------------------------------------------------------------


def post(
    url: str, token: str, body: dict | None = None, method: str = "POST"
) -> tuple[int, dict | None]:
    response = httpx.request(
        method,
        url,
        json=body,
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        timeout=30,
    )
    return response.status_code, response.json() if response.content else None


def post_at_once(calls: list[tuple]) -> list[tuple[int, dict | None]]:
    """Send every (url, token, body[, method]) from its own thread, released together; the
    answers in the same order."""
    barrier = threading.Barrier(len(calls))
    answers: list = [None] * len(calls)

    def send(i: int, url: str, token: str, body: dict | None, method: str = "POST") -> None:
        barrier.wait()
        try:
            answers[i] = post(url, token, body, method)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            answers[i] = (None, repr(exc))

    threads = [threading.Thread(target=send, args=(i, *call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return answers


def set_reclaim(project, route: str) -> None:
    """`hot`: the reclaim ran a moment ago, so the lease is the one-statement path; `reclaim`:
    it is due, so every request goes through the scheduler (and races for the reclaim too)."""
    when = timezone.now() if route == "hot" else timezone.now() - timedelta(hours=1)
    Project.objects.filter(pk=project.pk).update(leases_reclaimed_at=when)


# A race shows only when one statement starts before another commits, so each test repeats its
# burst. Measured on broken code: without the lease's row lock, the redundancy test fails with a
# 500 (open slots below zero); before `lease_serial`, a stale snapshot leased past the cap or the
# same task twice (a 500), and 2 to 4 of the 4 one-annotator tests failed in each of 6 runs.
BURSTS = 8


def one_region_project():
    """A project whose corpus has exactly one region: a sentence as long as the window, every
    tag asked. Redundancy 2, no gold checks: two slots in all, and no new round can add any."""
    manager = UserFactory()
    project = make_project(owner=manager, window_size=3, tags_per_task=None, redundancy=2)
    services.corpus_import(
        project=project, user=manager, file=io.BytesIO(b"a b c\n"), format="tokenized", max_bytes=99
    )
    assert Task.objects.filter(project=project).count() == 1
    return project


@pytest.mark.parametrize("route", ["hot", "reclaim"])
def test_annotators_asking_at_once_never_get_more_leases_than_the_redundancy(live_server, route):
    for _ in range(BURSTS):
        project = one_region_project()
        set_reclaim(project, route)
        users = annotators(project, 12)
        url = f"{live_server.url}/api/projects/{project.pk}/tasks/next/"
        answers = post_at_once([(url, user.auth_token.key, None) for user in users])

        statuses = [status for status, _ in answers]
        assert set(statuses) <= {200, 204}, answers
        leased = [body for status, body in answers if status == 200]
        assert 1 <= len(leased) <= 2  # SKIP LOCKED may turn one away while another holds the row
        assert len({body["assignment"] for body in leased}) == len(leased)
        # Then the others, one at a time, find exactly the slot that is left, if one is.
        turned_away = [user for user, status in zip(users, statuses, strict=True) if status == 204]
        late = [post(url, user.auth_token.key)[0] for user in turned_away]
        assert late.count(200) == 2 - len(leased)
        assert Assignment.objects.filter(project=project).count() == 2
        assert Task.objects.get(project=project).open_slots == 0


@pytest.mark.parametrize("route", ["hot", "reclaim"])
def test_one_annotators_requests_at_once_get_one_lease_back(live_server, project, corpus, route):
    # A phone that resends "next" while its first request is still on the way: every copy is
    # answered with the one lease the first made (a live lease not named is handed back).
    url = f"{live_server.url}/api/projects/{project.pk}/tasks/next/"
    for annotator in annotators(project, BURSTS):
        set_reclaim(project, route)
        answers = post_at_once([(url, annotator.auth_token.key, None)] * 8)

        assert [status for status, _ in answers] == [200] * 8, answers
        (lease,) = Assignment.objects.filter(annotator=annotator)
        assert {body["assignment"] for _, body in answers} == {lease.pk}
    open_slots = Task.objects.filter(is_gold=False).values_list("open_slots", flat=True)
    assert sum(project.redundancy - slots for slots in open_slots) == BURSTS


@pytest.mark.parametrize("route", ["hot", "reclaim"])
def test_requests_at_once_never_pass_the_lease_cap(live_server, project, corpus, route):
    url = f"{live_server.url}/api/projects/{project.pk}/tasks/next/"
    for annotator in annotators(project, BURSTS):
        token = annotator.auth_token.key
        first = post(url, token)[1]["assignment"]
        second = post(url, token, {"holding": [first]})[1]["assignment"]
        set_reclaim(project, route)

        # Holding two, eight requests at once for a third: one is made, and all eight get it.
        answers = post_at_once([(url, token, {"holding": [first, second]})] * 8)
        assert [status for status, _ in answers] == [200] * 8, answers
        (third,) = {body["assignment"] for _, body in answers}
        assert third not in (first, second)

        # Holding three, eight at once for a fourth: all are refused, none is made.
        answers = post_at_once([(url, token, {"holding": [first, second, third]})] * 8)
        assert {(status, body["error"]["code"]) for status, body in answers} == {
            (409, "lease_limit")
        }, answers
        leases = Assignment.objects.filter(annotator=annotator)
        assert sorted(leases.values_list("id", flat=True)) == sorted([first, second, third])
        assert len(set(leases.values_list("task_id", flat=True))) == 3


def test_an_answer_sent_several_times_at_once_is_stored_once(
    live_server, project, corpus, annotator
):
    token = annotator.auth_token.key
    status, task = post(f"{live_server.url}/api/projects/{project.pk}/tasks/next/", token)
    assert status == 200
    body = {
        "assignment": task["assignment"],
        "counts": {tag["name"]: int(i == 0) for i, tag in enumerate(task["tags"])},
        "seconds_on_device": 2.0,
        "idempotency_key": "sent-once",
    }
    url = f"{live_server.url}/api/observations/"
    answers = post_at_once([(url, token, body)] * 6)

    assert sorted(status for status, _ in answers) == [200] * 5 + [201], answers
    assert len({answer["id"] for _, answer in answers}) == 1
    assert [answer["replayed"] for _, answer in answers].count(False) == 1
    assert Observation.objects.filter(annotator=annotator).count() == 1


def test_two_different_answers_at_once_store_one_and_refuse_the_other(
    live_server, project, corpus, annotator
):
    token = annotator.auth_token.key
    status, task = post(f"{live_server.url}/api/projects/{project.pk}/tasks/next/", token)
    assert status == 200
    url = f"{live_server.url}/api/observations/"
    calls = []
    for i in range(4):
        body = {
            "assignment": task["assignment"],
            "counts": {tag["name"]: 0 for tag in task["tags"]},
            "idempotency_key": f"device-{i}",
        }
        calls.append((url, token, body))
    answers = post_at_once(calls)

    assert sorted(status for status, _ in answers) == [201, 409, 409, 409], answers
    for status, answer in answers:
        if status == 409:
            assert answer["error"]["message"] == "This assignment has already been answered."
    assert Observation.objects.filter(annotator=annotator).count() == 1


def test_a_verification_answer_sent_several_times_at_once_is_stored_once(
    live_server, project, corpus, annotator
):
    """Issue 15: the same Yes / No resent at once (one statement on PostgreSQL, the service for
    the copies that lose) is stored once; a different answer under another key is refused."""
    from annotation.models import Sentence

    windows = [
        services.VerificationWindow(sentence_id=s.pk, start=0, shown_tags=s.gold_tags[:2])
        for s in Sentence.objects.filter(project=project, split="train")
    ]
    services.verification_round_create(project_id=project.pk, version_number=1, windows=windows)
    Project.objects.filter(pk=project.pk).update(verification_share=1.0)
    token = annotator.auth_token.key
    status, task = post(f"{live_server.url}/api/projects/{project.pk}/tasks/next/", token)
    assert status == 200 and task["kind"] == "verify"
    url = f"{live_server.url}/api/observations/"
    same = {"assignment": task["assignment"], "answer": False, "wrong": 1,
            "seconds_on_device": 1.0, "idempotency_key": "once"}  # fmt: skip
    other = {**same, "answer": True, "wrong": None, "idempotency_key": "other"}
    answers = post_at_once([(url, token, same)] * 5 + [(url, token, other)])

    statuses = sorted(status for status, _ in answers)
    stored = Observation.objects.get(annotator=annotator)
    if stored.idempotency_key == "once":
        assert statuses == [200] * 4 + [201, 409], answers
        assert (stored.answer, stored.wrong) == (False, 1)
    else:  # the other answer won the race: every copy of the first is refused
        assert statuses == [201] + [409] * 5, answers
    assert len({a["id"] for s, a in answers if s < 300}) == 1


# Private must mean private (issue 24, item 4) ---------------------------------------------------


def unleased_project():
    """A project that may still become private (one tag a task, no task leased yet) and its
    annotator."""
    manager = UserFactory()
    project = make_project(owner=manager, tags_per_task=1)
    services.corpus_import(
        project=project, user=manager, file=io.BytesIO(b"a b c\nd e f\n"), format="tokenized",
        max_bytes=99,
    )  # fmt: skip
    return project, member(project)


def private_ready_project():
    """As `unleased_project`, with a count task leased to the annotator (so the service no
    longer lets the project become private)."""
    project, user = unleased_project()
    lease = scheduler.task_lease_next(project=project, annotator=user, gold_draw=1.0)
    name = project.tags.get(position=lease.tags[0]).name
    return project, user, lease, {name: 1}


def assert_private_holds_no_true_count(project):
    project.refresh_from_db()
    if project.private:
        assert not Observation.objects.filter(project=project, mechanism="").exists()


@pytest.mark.parametrize("route", ["statement", "service"])
def test_an_answer_that_arrives_while_the_switch_to_private_commits_is_refused(live_server, route):
    """A switch holds the project's row when the true count arrives: the answer waits, then
    sees a private project and is refused (before the fix it was stored from the statement's
    snapshot, and the project became private holding a true count). The service refuses a
    switch once a task is out, so the switch here is made on the row itself: the answer's own
    guard, whatever changed the row."""
    project, user, lease, counts = private_ready_project()
    switched, outcome = threading.Event(), {}

    def switch():
        try:
            with transaction.atomic():
                Project.objects.select_for_update().get(pk=project.pk)
                Project.objects.filter(pk=project.pk).update(
                    private=True, alpha=3.0, mechanism="krr"
                )
                switched.set()
                time.sleep(0.5)  # the answer is sent meanwhile
        finally:
            connection.close()

    thread = threading.Thread(target=switch)
    thread.start()
    assert switched.wait(10)
    body = {"assignment": lease.assignment_id, "counts": counts, "idempotency_key": "k"}
    if route == "statement":
        status, reply = post(f"{live_server.url}/api/observations/", user.auth_token.key, body)
        outcome["status"], outcome["code"] = status, reply["error"]["code"] if status >= 400 else ""
    else:
        with pytest.raises(InvalidInput) as refused:
            services.observation_submit(
                annotator=user, assignment_id=lease.assignment_id, counts=counts,
                idempotency_key="k",
            )  # fmt: skip
        outcome["status"], outcome["code"] = 400, refused.value.code
    thread.join(10)

    assert outcome == {"status": 400, "code": "invalid"}
    assert Project.objects.get(pk=project.pk).private
    assert not Observation.objects.filter(project=project).exists()


def test_the_switch_to_private_and_the_first_answer_at_once_never_both_succeed(live_server):
    """Issue 24: PATCH {"private": true} and the first answer sent at once both succeeded in 6
    of 15 tries. Now the switch is refused (a task is out, and then the project has an answer);
    were it to win, the true count would be refused."""
    outcomes = set()
    for _ in range(15):
        project, user, lease, counts = private_ready_project()
        body = {"assignment": lease.assignment_id, "counts": counts, "idempotency_key": "k"}
        switch_url = f"{live_server.url}/api/projects/{project.pk}/"
        answers = post_at_once(
            [
                (switch_url, project.owner.auth_token.key, {"private": True}, "PATCH"),
                (f"{live_server.url}/api/observations/", user.auth_token.key, body, "POST"),
            ]
        )
        (switch_status, _), (answer_status, _) = answers
        assert (switch_status, answer_status) in {(200, 400), (409, 201)}, answers
        assert_private_holds_no_true_count(project)
        outcomes.add((switch_status, answer_status))
    assert outcomes  # which side wins is up to the scheduler of threads


def test_the_switch_to_private_is_refused_once_a_task_is_out(live_server):
    """A phone may hold a task leased before the switch and answer it offline: its true count
    would leave the phone. So privacy is fixed once any task was leased."""
    project, user, lease, counts = private_ready_project()
    status, reply = post(
        f"{live_server.url}/api/projects/{project.pk}/", project.owner.auth_token.key,
        {"private": True}, "PATCH",
    )  # fmt: skip
    assert status == 409, reply
    assert "once annotators have been given tasks" in reply["error"]["message"]
    assert not Project.objects.get(pk=project.pk).private


def test_a_lease_made_while_the_switch_to_private_commits_offers_a_private_task(live_server):
    """The switch holds every member's row (their lease_serial) until it commits: a lease asked
    meanwhile waits, finds its snapshot stale and is made afresh by the scheduler, which reads
    the project as the switch left it. The task offered carries the release table."""
    project, user = unleased_project()
    switched = threading.Event()

    def switch():
        try:
            with transaction.atomic():
                services.project_update(project=project, private=True)
                switched.set()
                time.sleep(0.5)  # the lease is asked meanwhile
        finally:
            connection.close()

    thread = threading.Thread(target=switch)
    thread.start()
    assert switched.wait(10)
    status, task = post(
        f"{live_server.url}/api/projects/{project.pk}/tasks/next/", user.auth_token.key, {}
    )
    thread.join(10)
    assert status == 200, task
    assert Project.objects.get(pk=project.pk).private
    assert task["privacy"] is not None and task["privacy"]["mechanism"] == "krr", task


def test_a_lease_and_the_switch_to_private_at_once_never_leave_a_true_count_task_out(
    live_server,
):
    """Either the lease comes first and the switch is refused, or the switch comes first and
    the task offered is private."""
    outcomes = set()
    for _ in range(10):
        project, user = unleased_project()
        answers = post_at_once(
            [
                (f"{live_server.url}/api/projects/{project.pk}/", project.owner.auth_token.key,
                 {"private": True}, "PATCH"),
                (f"{live_server.url}/api/projects/{project.pk}/tasks/next/", user.auth_token.key,
                 {}, "POST"),
            ]
        )  # fmt: skip
        (switch_status, _), (lease_status, task) = answers
        assert lease_status == 200, answers
        if switch_status == 200:
            assert task["privacy"] is not None, answers
        else:
            assert switch_status == 409 and task.get("privacy") is None, answers
        outcomes.add(switch_status)
    assert outcomes
