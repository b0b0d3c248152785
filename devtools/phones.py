"""Simulated phones for the benchmarks: a seeded project, and keep-alive HTTP/1.1 clients.

`seed_project` runs inside a process whose database is the scratch one (`manage.py <benchmark>
--seed-only`): a project from a slice of UD English EWT, one annotator account (with an API
token) per phone, and the gold tags, so that a phone can answer as an exact annotator would.

`Connection` is one keep-alive HTTP/1.1 connection on asyncio with just enough HTTP for Tally's
own answers: thousands of requests a second from one process, which a general client library
spends more CPU on than the server spends answering them.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from pathlib import Path

EWT_TRAIN = (
    Path(__file__).resolve().parent.parent / "data" / "ud-english-ewt" / "en_ewt-ud-train.conllu.gz"
)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Connection:
    """One keep-alive HTTP/1.1 connection to 127.0.0.1:`port`. `headers`: extra header lines,
    each ending in CRLF. `timeout` (seconds) bounds a whole request, after which the connection
    is dropped. With `resend_on_stale`, a request that fails on a kept-alive connection (the
    server may have closed it while idle) is sent once more on a new one; without, the caller
    hears of every failure (the fault benchmark's phones resend by themselves). With `max_idle`
    (seconds), a connection idle that long is not reused, as HTTP clients keep their idle
    connections for less time than the server does (gunicorn: 5 s)."""

    def __init__(
        self,
        port: int,
        headers: str,
        *,
        timeout: float | None = None,
        resend_on_stale: bool = True,
        max_idle: float | None = None,
    ) -> None:
        self.port = port
        self.headers = headers
        self.timeout = timeout
        self.resend_on_stale = resend_on_stale
        self.max_idle = max_idle
        self.last_used = 0.0
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        if self.timeout is None:
            return await self._request(method, path, body)
        try:
            return await asyncio.wait_for(self._request(method, path, body), self.timeout)
        except TimeoutError:
            self.close()
            raise

    async def _request(self, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{self.headers}"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        if self.max_idle is not None and time.monotonic() - self.last_used > self.max_idle:
            self.close()
        for attempt in range(2):
            fresh = self.writer is None
            if fresh:
                self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            try:
                self.writer.write(head + body)
                # The whole head at once: a read per header line costs the load generator
                # more CPU than the server spends on some requests.
                response = await self.reader.readuntil(b"\r\n\r\n")
                status = int(response.split(b" ", 2)[1])
                length, close = 0, False
                for line in response.lower().split(b"\r\n")[1:]:
                    if line.startswith(b"content-length:"):
                        length = int(line[15:])
                    elif line.startswith(b"connection:") and b"close" in line:
                        close = True
                payload = await self.reader.readexactly(length) if length else b""
                self.last_used = time.monotonic()
                if close:
                    self.close()
                return status, payload
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                self.close()
                exc.fresh = fresh
                # A kept-alive connection the server had closed: once more on a new one. A
                # new connection that fails is the server's failure: the caller hears of it.
                if attempt or fresh or not self.resend_on_stale:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def gold_key(tokens: list[str]) -> str:
    return "\x1f".join(tokens)


def seed_project(
    *,
    phones: int,
    sentences: int,
    corpus: str | Path = EWT_TRAIN,
    tags_per_task: int | None = 2,
    redundancy: int = 3,
    lease_seconds: int = 600,
    dashboards: int = 0,
    with_gold: bool = False,
    retrain_target: int = 0,
) -> dict:
    """A project of the first `sentences` sentences of `corpus`, `phones` annotators with API
    tokens, a manager with one, and enough more managers to hold `dashboards` event streams.
    Runs in a Django process on the scratch database; returns {"project", "tokens",
    "annotators", "manager_token", "managers", "tags", "redundancy", "lease_seconds", "gold"?,
    "target"?}.

    With `retrain_target` (a number of answers), a second, small project of the same manager
    too, whose retrains take seconds: that many exact answers from one annotator, a first model,
    and the annotator's token to add answers ("target": {"project", "token"})."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection

    from accounts.services import token_issue
    from annotation import services
    from annotation.models import Membership, Sentence
    from devtools.seeding import conllu_import

    User = get_user_model()
    manager = User.objects.create_user("bench-manager", password=secrets.token_urlsafe(16))
    project = services.project_create(
        owner=manager,
        name="Benchmark",
        tag_preset="ud_upos",
        window_size=5,
        tags_per_task=tags_per_task,
        redundancy=redundancy,
        gold_fraction=0.0,
        # The phones answer count tasks (the cycle these benchmarks measure, and check against
        # their history); verification tasks, once a retrain made a model, would be refused.
        verification_share=0.0,
        lease_seconds=lease_seconds,
    )
    conllu_import(project, manager, Path(corpus), sentences=sentences)
    managers = []
    for i in range(-(-dashboards // settings.TALLY_SSE_STREAMS_PER_USER)):
        user = User.objects.create_user(f"bench-dashboard-{i}")
        Membership.objects.create(project=project, user=user, role="manager")
        managers.append(token_issue(user=user, name="benchmark").key)
    tokens, annotators = [], []
    for i in range(phones):
        user = User.objects.create_user(f"bench-{i}")
        Membership.objects.create(project=project, user=user, role="annotator")
        tokens.append(token_issue(user=user, name="benchmark").key)
        annotators.append(user.pk)
    names = [tag.name for tag in project.tags.order_by("position")]
    seeded = {
        "project": project.pk,
        "tokens": tokens,
        "annotators": annotators,
        "manager_token": token_issue(user=manager, name="benchmark").key,
        "managers": managers,
        "tags": names,
        "redundancy": redundancy,
        "lease_seconds": lease_seconds,
    }
    if with_gold:
        rows = Sentence.objects.filter(project=project).values_list("tokens", "gold_tags")
        seeded["gold"] = {gold_key(t): [names[k] for k in g] for t, g in rows if g is not None}
    if retrain_target:
        seeded["target"] = _retrain_target(
            manager=manager, corpus=corpus, sentences=min(sentences, 1500), answers=retrain_target
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # fresh planner statistics, as autovacuum would keep them
    return seeded


def _retrain_target(*, manager, corpus, sentences: int, answers: int) -> dict:
    import uuid

    from django.contrib.auth import get_user_model

    from accounts.services import token_issue
    from annotation import scheduler, services
    from annotation.models import Membership, Sentence
    from devtools.seeding import conllu_import
    from learning import services as learning_services

    project = services.project_create(
        owner=manager, name="Retrain target", tag_preset="ud_upos", window_size=5,
        tags_per_task=2, redundancy=3, gold_fraction=0.0, verification_share=0.0,
    )  # fmt: skip
    conllu_import(project, manager, Path(corpus), sentences=sentences)
    user = get_user_model().objects.create_user("bench-target")
    Membership.objects.create(project=project, user=user, role="annotator")
    names = [tag.name for tag in project.tags.order_by("position")]
    for _ in range(answers):
        lease = scheduler.task_lease_next(project=project, annotator=user)
        if lease is None:
            break
        gold = Sentence.objects.get(pk=lease.sentence_id).gold_tags
        window = gold[lease.start : lease.start + lease.length]
        services.observation_submit(
            annotator=user,
            assignment_id=lease.assignment_id,
            counts={names[k]: window.count(k) for k in lease.tags},
            idempotency_key=uuid.uuid4().hex,
        )
    learning_services.retrain_run(project_id=project.pk, trigger="manual")
    return {"project": project.pk, "token": token_issue(user=user, name="benchmark").key}
