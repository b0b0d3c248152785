"""Verification tasks through the scheduler, the submission service and the API (issue 15): only
once a model version's round exists, leases and redundancy, replays and 409s, another user's
lease, gold checks with a known answer, exports and the stats per task kind. Runs on SQLite and
PostgreSQL (where the one-statement path must hand verification over to the scheduler)."""

import csv
import io
import json

import pytest

from annotation import scheduler, selectors, services
from annotation.models import Observation, Project, Sentence, Task
from tests.support.factories import client_for, import_jsonl, member, next_task

NAMES = ["NOUN", "VERB", "DET", "ADJ"]


def make_round(project, *, version=1, wrong_first=False, gold=False):
    """A verification round of `version` as a retrain makes it: one window per training
    sentence (gold-check ones with `gold`), showing the gold tags (the first word's tag changed
    with `wrong_first`)."""
    windows = []
    splits = ["gold_check"] if gold else ["train"]
    for sentence in Sentence.objects.filter(project=project, split__in=splits):
        shown = list(sentence.gold_tags[:3])
        if wrong_first:
            shown[0] = (shown[0] + 1) % len(NAMES)
        windows.append(
            services.VerificationWindow(
                sentence_id=sentence.pk, start=0, shown_tags=shown, is_gold=gold
            )
        )
    services.verification_round_create(
        project_id=project.pk, version_number=version, windows=windows
    )
    project.refresh_from_db()
    return windows


def verify_share(project, share):
    Project.objects.filter(pk=project.pk).update(verification_share=share)
    project.refresh_from_db()


def submit(client, task, key="v-1", **body):
    body = {"assignment": task["assignment"], "idempotency_key": key, **body}
    return client.post("/api/observations/", body, format="json")


def test_no_model_serves_count_tasks_only(project, corpus, annotator):
    verify_share(project, 1.0)
    client = client_for(annotator)
    for i in range(3):
        task = next_task(client, project).json()
        assert task["kind"] == "count" and "max_count" in task
        answer = {"counts": {t["name"]: 0 for t in task["tags"]}, "seconds_on_device": 1.0}
        assert submit(client, task, key=f"c-{i}", **answer).status_code == 201
    assert not Task.objects.filter(kind="verify").exists()


def test_a_verification_task_shows_the_models_tags_with_their_guidelines(
    project, corpus, annotator
):
    verify_share(project, 1.0)
    make_round(project)
    task = next_task(client_for(annotator), project).json()
    assert task["kind"] == "verify" and task["model_version"] == 1
    assert "max_count" not in task and "counts" not in task
    stored = Task.objects.get(assignments__pk=task["assignment"])
    assert task["shown"] == [NAMES[k] for k in stored.shown_tags]
    assert len(task["shown"]) == task["window"]["length"] == stored.length
    assert [t["name"] for t in task["tags"]] == sorted(set(task["shown"]), key=NAMES.index)
    assert all(t["guideline"] for t in task["tags"])


def test_yes_no_and_wrong_word_stored_once_with_the_shown_tags(project, corpus, annotator):
    verify_share(project, 1.0)
    make_round(project)
    client = client_for(annotator)
    task = next_task(client, project).json()
    body = {"answer": False, "wrong": 1, "seconds_on_device": 0.8}
    first = submit(client, task, **body)
    assert first.status_code == 201, first.json()
    out = first.json()
    assert out["kind"] == "verify" and out["answer"] is False and out["wrong"] == 1
    assert out["shown"] == task["shown"] and out["model_version"] == 1
    assert out["replayed"] is False
    # The same key and body again: the stored answer, once.
    replay = submit(client, task, **body)
    assert replay.status_code == 200 and replay.json()["replayed"] is True
    assert replay.json()["id"] == out["id"]
    # The same key with another answer: refused, the first stands.
    other = submit(client, task, answer=True, seconds_on_device=0.8)
    assert other.status_code == 409
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    # Another key on the answered lease: a conflict.
    again = submit(client, task, key="v-2", **body)
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
    stored = Observation.objects.get()
    assert stored.kind == "verify" and stored.answer is False and stored.wrong == 1
    assert stored.tags == [] and stored.counts == []
    assert stored.shown_tags == Task.objects.get(assignments__pk=task["assignment"]).shown_tags
    assert stored.model_version == 1 and stored.seconds_on_device == 0.8


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"answer": "yes"}, "answer"),
        ({"answer": True, "wrong": 0}, "wrong"),
        ({"answer": False, "wrong": 3}, "wrong"),  # the window has 3 words: 0 to 2
        ({"answer": False, "wrong": True}, "wrong"),
        ({"counts": {"NOUN": 1}}, "counts"),
        ({"answer": True, "counts": {"NOUN": 1}}, "counts"),
    ],
)
def test_malformed_verification_answers_are_refused(project, corpus, annotator, body, field):
    verify_share(project, 1.0)
    make_round(project)
    client = client_for(annotator)
    task = next_task(client, project).json()
    response = submit(client, task, **body)
    assert response.status_code == 400, response.json()
    assert field in response.json()["error"]["fields"]
    assert not Observation.objects.exists()


def test_a_count_task_takes_no_yes_no(project, corpus, annotator):
    client = client_for(annotator)
    task = next_task(client, project).json()
    response = submit(client, task, answer=True)
    assert response.status_code == 400 and "answer" in response.json()["error"]["fields"]


def test_another_users_lease_is_not_found(project, corpus, annotator):
    verify_share(project, 1.0)
    make_round(project)
    task = next_task(client_for(annotator), project).json()
    intruder = member(project)
    response = submit(client_for(intruder), task, answer=True)
    assert response.status_code == 404
    assert not Observation.objects.exists()


def test_redundancy_then_count_tasks_and_never_the_same_window_twice(project, corpus):
    """Each verification task goes to at most `redundancy` annotators, each at most once; once
    none is left for them an annotator gets count tasks."""
    verify_share(project, 1.0)
    windows = make_round(project)
    first, second, third = (member(project) for _ in range(3))
    had: dict[int, list[int]] = {}
    for user in (first, second, third):
        client = client_for(user)
        for i in range(len(windows)):
            task = next_task(client, project).json()
            if task["kind"] != "verify":
                break
            had.setdefault(user.pk, []).append(task["assignment"])
            assert submit(client, task, key=f"{user.pk}-{i}", answer=True).status_code == 201
    tasks = Task.objects.filter(kind="verify")
    assert all(t.assignments.count() == project.redundancy for t in tasks)  # 2
    assert all(t.open_slots == 0 for t in tasks)
    assert len(had[first.pk]) == len(had[second.pk]) == len(windows)
    assert third.pk not in had  # the round was full: a count task instead
    per_user = Observation.objects.filter(annotator=first).values_list(
        "assignment__task", flat=True
    )
    assert len(set(per_user)) == len(per_user)


def test_only_the_served_versions_round_is_leased(project, corpus, annotator):
    verify_share(project, 1.0)
    make_round(project, version=1)
    make_round(project, version=2, wrong_first=True)
    task = next_task(client_for(annotator), project).json()
    assert task["kind"] == "verify" and task["model_version"] == 2


@pytest.mark.postgres
def test_a_held_verification_lease_comes_back_through_the_one_statement_path(
    project, corpus, annotator
):
    verify_share(project, 1.0)
    make_round(project)
    client = client_for(annotator)
    task = next_task(client, project).json()
    verify_share(project, 0.0)  # the plain case again: the statement hands the live lease back
    again = next_task(client, project).json()
    assert again == task


def test_gold_check_verification_has_a_known_answer(project, manager, annotator):
    import_jsonl(
        project, manager, filename="c.jsonl", max_bytes=10**6, gold_check_fraction=0.5, seed=1
    )
    Project.objects.filter(pk=project.pk).update(gold_fraction=1.0, verification_share=1.0)
    make_round(project, wrong_first=True, gold=True)
    lease = scheduler.task_lease_next(
        project=project, annotator=annotator, gold_draw=0.0, kind_draw=0.0
    )
    assert lease.kind == "verify" and lease.is_gold
    observation, _ = services.observation_submit(
        annotator=annotator,
        assignment_id=lease.assignment_id,
        idempotency_key="g-1",
        answer=False,
        wrong=0,
    )
    assert observation.is_gold
    sentence = Sentence.objects.get(pk=lease.sentence_id)
    window = sentence.gold_tags[lease.start : lease.start + lease.length]
    check = {"kind": "verify", "window": window, "tags": [], "counts": []}
    shown = lease.shown_tags
    assert selectors.check_answer_right(**check, shown_tags=shown, answer=False, wrong=0)
    assert not selectors.check_answer_right(**check, shown_tags=shown, answer=False, wrong=1)
    assert selectors.check_answer_right(**check, shown_tags=shown, answer=False, wrong=None)
    assert not selectors.check_answer_right(**check, shown_tags=shown, answer=True, wrong=None)
    assert selectors.check_answer_right(**check, shown_tags=window, answer=True, wrong=None)
    assert not selectors.check_answer_right(**check, shown_tags=window, answer=False, wrong=None)


def test_exports_and_stats_carry_the_verification_answers(project, corpus, annotator, manager):
    verify_share(project, 1.0)
    make_round(project)
    client = client_for(annotator)
    task = next_task(client, project).json()
    assert submit(client, task, answer=False, wrong=2, seconds_on_device=1.5).status_code == 201
    verify_share(project, 0.0)
    count = next_task(client, project).json()
    answer = {"counts": {t["name"]: 0 for t in count["tags"]}, "seconds_on_device": 4.5}
    assert submit(client, count, key="c-1", **answer).status_code == 201
    manager_client = client_for(manager)
    base = f"/api/projects/{project.pk}/exports/"
    lines = b"".join(manager_client.get(base + "observations.jsonl").streaming_content)
    rows = [json.loads(line) for line in lines.decode().splitlines()]
    verify, counted = rows
    assert verify["kind"] == "verify" and verify["shown"] == task["shown"]
    assert verify["model_version"] == 1 and verify["answer"] is False and verify["wrong"] == 2
    assert verify["tags"] == [] and verify["counts"] == []
    assert counted["kind"] == "count" and counted["shown"] is None and counted["answer"] is None
    text = b"".join(manager_client.get(base + "observations.csv").streaming_content).decode()
    table = list(csv.DictReader(io.StringIO(text)))
    assert {"kind", "shown", "model_version", "answer", "wrong"} <= set(table[0])
    assert table[0]["shown"] == "|".join(task["shown"]) and table[0]["answer"] == "no"
    assert table[0]["wrong"] == "2" and table[1]["answer"] == "" and table[1]["kind"] == "count"
    stats = manager_client.get(f"/api/projects/{project.pk}/stats/").json()
    assert stats["by_kind"] == {
        "count": {"observations": 1, "seconds_per_answer": 4.5},
        "verify": {"observations": 1, "seconds_per_answer": 1.5},
    }
