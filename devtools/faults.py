"""The fault-injection benchmark (`manage.py benchmark_faults`): the annotator cycle under load
while the stack is broken on a schedule, then checked against its history.

Phones (`Phone`) run the whole annotator cycle over real HTTP with keep-alive, answering as exact
annotators from the corpus' gold tags, with the client-side faults phones have: a response lost
after the server acted (the phone resends with the same idempotency key), the same answer sent
twice at once, a phone that stalls past its lease and answers late, a phone that goes offline
with the tasks it holds, answers them, and comes back with a queue. Every answer is kept until
the server acknowledges it (201, or 200 for a replay), and resent after any failure; every
failure is recorded (no silent resend below the phone).

Meanwhile `FaultInjector` breaks the stack on three tracks. The web tier's, one fault at a time,
in turn: `kill -9` of a gunicorn worker, Redis stopped and started, PostgreSQL stopped as in a
crash (`-m immediate`) and started (crash recovery). The retrains': `kill -9` of the Celery
worker that is retraining, in the middle of the retrain (it is started again a second later, as
a restart policy does), then the wait for the next retrain to succeed. The live updates': `kill
-9` of a Celery worker in the middle of a live update, started again a second later. After every
Celery kill the live models are checked (`devtools.live_check`). A manager asks for a retrain
now and then.

At the end the history is checked, not just counters (`check_history`): every answer a phone saw
acknowledged is stored exactly once and as sent; nothing is stored that no phone sent; no answer
was refused; no region has more answers than its redundancy; every model version is complete
and loadable; the previous model stayed current while a killed retrain was underway; a retrain
succeeded after every fault (`retrain_figures`). `window_figures` counts failures by fault
window and how long phones were refused after each fault.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from devtools.live_check import live_model_check
from devtools.phones import Connection, gold_key, percentile
from devtools.stack import PROXY_HEADERS, Platform, Postgres, Redis, children, cpu_seconds

KINDS = (
    "gunicorn_worker_kill", "celery_worker_kill", "live_update_kill", "redis_restart",
    "postgres_restart",
)  # fmt: skip
WORKER_KINDS = ("celery_worker_kill", "live_update_kill")
REQUEST_TIMEOUT = 15.0
# A fault's window lasts this long after what it broke is back; the next fault waits for it.
GRACE_SECONDS = {"postgres_restart": 5.0}
DEFAULT_GRACE_SECONDS = 3.0


def now() -> float:
    return time.monotonic()


# What happened ----------------------------------------------------------------------------------


@dataclass
class Answer:
    phone: int
    annotator: int
    key: str
    assignment: int
    counts: dict[str, int]
    late: bool = False  # answered after its lease expired (a stalled phone)
    sends: int = 0
    acked_at: float | None = None
    rejected: str = ""  # a 4xx the phone gave up on


@dataclass
class Attempt:
    what: str  # "submit", "next", "retrain"
    started: float
    ended: float
    outcome: str  # "ok", "4xx:409", "5xx:500", "connection (...)", "timeout"
    phone: int = -1  # -1: the manager

    @property
    def failed(self) -> bool:
        return self.outcome.startswith(("5xx", "connection", "timeout"))


@dataclass
class Fault:
    kind: str
    started: float
    back: float = 0.0  # what it broke is back (the service answers again)
    reference: float = 0.0  # refusals are counted from here
    detail: dict = field(default_factory=dict)

    @property
    def end(self) -> float:
        grace = GRACE_SECONDS.get(self.kind, DEFAULT_GRACE_SECONDS)
        return max(self.back, self.started) + grace


@dataclass
class History:
    answers: dict[tuple[int, str], Answer] = field(default_factory=dict)
    attempts: list[Attempt] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    client_faults: Counter = field(default_factory=Counter)
    # (phone, from, to): a phone offline by its own choice, which no refusal includes
    offline: list[tuple[int, float, float]] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0


# Phones ------------------------------------------------------------------------------------------


@dataclass
class Behaviour:
    """How often phones misbehave (per cycle, except `stall_share`: the share of phones that
    stall once, past their lease)."""

    drop_response: float = 0.03
    duplicate_send: float = 0.03
    offline: float = 0.004
    offline_seconds: tuple[float, float] = (1.0, 5.0)
    stall_share: float = 0.1


class Phone:
    def __init__(self, run: Run, index: int, token: str, annotator: int, seed: int) -> None:
        self.run, self.index, self.annotator = run, index, annotator
        headers = f"Authorization: Token {token}\r\nContent-Type: application/json\r\n"
        headers += "".join(f"{k}: {v}\r\n" for k, v in PROXY_HEADERS.items())
        # Every failure is the phone's to see and handle (no silent resend), but an idle
        # connection is not reused past the server's keep-alive (gunicorn closes it after 5 s).
        options = {"timeout": REQUEST_TIMEOUT, "resend_on_stale": False, "max_idle": 4.0}
        self.connection = Connection(run.port, headers, **options)
        self.spare = Connection(run.port, headers, **options)
        self.rng = random.Random(seed)
        self.held: list[dict] = []  # leased tasks, oldest first
        self.queue: list[Answer] = []  # answered, not yet acknowledged
        self.keys = itertools.count()
        self.failures = 0
        self.will_stall = self.rng.random() < run.behaviour.stall_share

    # HTTP, recorded

    async def call(self, what: str, path: str, body: bytes, connection=None):
        connection = connection or self.connection
        started = now()
        try:
            status, payload = await connection.request("POST", path, body)
        except TimeoutError:
            self.run.history.attempts.append(Attempt(what, started, now(), "timeout", self.index))
            return None, b""
        except (OSError, asyncio.IncompleteReadError) as exc:
            fresh = getattr(exc, "fresh", None)  # None: connecting failed
            reused = {None: "connect", True: "new", False: "kept-alive"}[fresh]
            self.run.history.attempts.append(
                Attempt(
                    what,
                    started,
                    now(),
                    f"connection ({reused}: {type(exc).__name__})",
                    self.index,
                )
            )
            return None, b""
        outcome = "ok" if status < 400 else f"{status // 100}xx:{status}"
        self.run.history.attempts.append(Attempt(what, started, now(), outcome, self.index))
        return status, payload

    async def backoff(self) -> None:
        self.failures += 1
        await asyncio.sleep(min(2.0, 0.05 * 2 ** min(self.failures, 6)) * self.rng.uniform(0.5, 1))

    # The cycle

    async def next_task(self) -> dict | None:
        body = json.dumps({"holding": [t["assignment"] for t in self.held]}).encode()
        status, payload = await self.call("next", self.run.next_path, body)
        if status == 200:
            self.failures = 0
            task = json.loads(payload)
            if all(t["assignment"] != task["assignment"] for t in self.held):
                self.held.append(task)
            return task
        if status is None or status >= 500:
            await self.backoff()
        elif status != 204:
            self.run.history.client_faults[f"next answered {status}"] += 1
            await asyncio.sleep(0.2)
        else:
            await asyncio.sleep(0.2)
        return None

    def answer(self, task: dict, *, late: bool = False) -> Answer:
        self.held = [t for t in self.held if t["assignment"] != task["assignment"]]
        start, length = task["window"]["start"], task["window"]["length"]
        gold = self.run.gold.get(gold_key(task["tokens"]))
        window = gold[start : start + length] if gold else []
        counts = {tag["name"]: window.count(tag["name"]) for tag in task["tags"]}
        answer = Answer(
            phone=self.index,
            annotator=self.annotator,
            key=f"p{self.index}-{next(self.keys)}",
            assignment=task["assignment"],
            counts=counts,
            late=late,
        )
        self.run.history.answers[(self.annotator, answer.key)] = answer
        return answer

    def body(self, answer: Answer) -> bytes:
        return json.dumps(
            {
                "assignment": answer.assignment,
                "counts": answer.counts,
                "idempotency_key": answer.key,
                "seconds_on_device": 2.0,
            }
        ).encode()

    def settle(self, answer: Answer, status: int | None, payload: bytes) -> bool:
        """Record the server's answer; True when the answer needs no more sending."""
        if status in (200, 201):
            stored = json.loads(payload)
            if stored.get("counts") != answer.counts or stored.get("assignment") != (
                answer.assignment
            ):
                self.run.history.client_faults["acknowledged with other counts"] += 1
            if answer.acked_at is None:
                answer.acked_at = now()
            return True
        if status is not None and 400 <= status < 500:
            answer.rejected = f"{status} {payload[:200].decode('utf-8', 'replace')}"
            return True
        return False

    async def send(self, answer: Answer) -> bool:
        behaviour = self.run.behaviour
        draw = self.rng.random()
        answer.sends += 1
        body = self.body(answer)
        path = "/api/observations/"
        if draw < behaviour.duplicate_send:
            self.run.history.client_faults["duplicate_sends"] += 1
            answer.sends += 1
            first, second = await asyncio.gather(
                self.call("submit", path, body), self.call("submit", path, body, self.spare)
            )
            # The second connection is a browser's for the moment (the first one was busy): not
            # kept, or it goes stale unseen (its worker killed) and fails a later fault's window.
            self.spare.close()
            done = [self.settle(answer, *result) for result in (first, second)]
            return any(done)
        status, payload = await self.call("submit", path, body)
        if draw < behaviour.duplicate_send + behaviour.drop_response and status is not None:
            # The response is lost on the way back: the phone knows nothing, and resends.
            self.run.history.client_faults["dropped_responses"] += 1
            return False
        return self.settle(answer, status, payload)

    async def flush(self) -> bool:
        """Send what is queued, oldest first; False at the first failure."""
        while self.queue:
            if not await self.send(self.queue[0]):
                await self.backoff()
                return False
            self.failures = 0
            self.queue.pop(0)
        return True

    async def live(self, planned: float) -> None:
        """The phone's day until the run stops (`run.stop_at`; `planned`: when it should)."""
        await asyncio.sleep(self.index * 0.01)  # phones connect 10 ms apart
        behaviour = self.run.behaviour
        stall_at = now() + self.rng.uniform(0.1, 0.6) * (planned - now())
        while now() < self.run.stop_at:
            if self.queue and not await self.flush():
                continue
            if self.will_stall and now() >= stall_at:
                self.will_stall = False
                await self.stall()
                continue
            if self.rng.random() < behaviour.offline:
                await self.offline()
                continue
            task = self.held[0] if self.held else await self.next_task()
            if task is None:
                continue
            self.queue.append(self.answer(task))

    async def stall(self) -> None:
        task = self.held[0] if self.held else await self.next_task()
        if task is None:
            return
        self.run.history.client_faults["stalls"] += 1
        await asyncio.sleep(self.run.lease_seconds + 2)
        self.queue.append(self.answer(task, late=True))

    async def offline(self) -> None:
        while len(self.held) < 3 and now() < self.run.stop_at:
            if await self.next_task() is None:
                break
        self.run.history.client_faults["offline_periods"] += 1
        self.run.history.client_faults["answers_queued_offline"] += len(self.held)
        for task in list(self.held):
            self.queue.append(self.answer(task))
        self.connection.close()
        self.spare.close()
        away = now()
        await asyncio.sleep(self.rng.uniform(*self.run.behaviour.offline_seconds))
        self.run.history.offline.append((self.index, away, now()))

    async def drain(self, deadline: float) -> None:
        while self.queue and now() < deadline:
            await self.flush()
        self.connection.close()
        self.spare.close()


# Server-side faults ------------------------------------------------------------------------------


class FaultInjector:
    def __init__(self, run: Run, *, per_kind: int, outage_seconds: float) -> None:
        self.run, self.per_kind, self.outage = run, per_kind, outage_seconds
        self.killed: list[int] = []  # retrain runs whose worker was killed
        self.rng = random.Random(run.seed + 1)

    async def inject(self, start: float, until: float) -> None:
        """Every fault of the schedule, `per_kind` of each kind, spread evenly from `start` to
        `until` on tracks at once: the web tier's (gunicorn, Redis, PostgreSQL, in turn) and
        one per kind of Celery kill (mid-retrain, mid-live-update). On a track a fault waits
        until the previous one's window is over, so each refusal has one cause, even if that
        makes the run longer."""
        kinds = self.run.kinds
        web = [kind for _ in range(self.per_kind) for kind in kinds if kind not in WORKER_KINDS]
        tracks = [web] + [[kind] * self.per_kind for kind in WORKER_KINDS if kind in kinds]
        await asyncio.gather(*(self.track(schedule, start, until) for schedule in tracks))

    async def track(self, schedule: list[str], start: float, until: float) -> None:
        interval = (until - start) / max(len(schedule), 1)
        ready = start
        for i, kind in enumerate(schedule):
            await asyncio.sleep(max(0.0, start + i * interval - now(), ready - now()))
            fault = Fault(kind, now())
            try:
                await getattr(self, kind)(fault)
            finally:
                self.run.history.faults.append(fault)
                self.run.log(f"{kind}: {fault.detail}")
            ready = fault.end

    async def gunicorn_worker_kill(self, fault: Fault) -> None:
        platform = self.run.platform
        workers = platform.web_workers()
        victim = self.rng.choice(workers)
        os.kill(victim, 9)
        fault.reference = fault.started
        while True:  # the master starts a replacement
            current = platform.web_workers()
            if victim not in current and len(current) >= len(workers):
                break
            await asyncio.sleep(0.02)
        fault.back = now()
        fault.detail = {"pid": victim, "replaced_in_s": round(fault.back - fault.started, 2)}

    async def celery_worker_kill(self, fault: Fault) -> None:
        """Ask for a retrain, wait until a worker is fitting, `kill -9` that worker (all its
        processes), check that the previous model is still current, start the worker again (as
        a restart policy does), and wait for the next retrain to succeed: the fault's window
        ends then. A kill that came after the retrain had finished is tried again (twice)."""
        run = self.run
        missed = 0
        for _ in range(3):
            running = await self.retrain_underway()
            if not running:
                fault.detail = {"mid_retrain": False, "why": "no retrain started within 90 s"}
                fault.reference = fault.back = now()
                return
            await asyncio.sleep(0.3)  # into the fit
            victim = await asyncio.to_thread(run.retraining_worker)
            version_before = await run.db_value_when_up(run.CURRENT_VERSION, [run.target_project])
            run.platform.kill(victim)
            self.killed.append(running)
            fault.reference = killed_at = now()
            # Read once the database answers (the web track may be restarting it just now).
            # Until the dead worker's claim on the project ends, no retrain of it can finish.
            status = await run.db_value_when_up(
                "SELECT status FROM learning_retrainrun WHERE id = %s", [running]
            )
            version_after = await run.db_value_when_up(run.CURRENT_VERSION, [run.target_project])
            await asyncio.sleep(1.0)  # a restart policy's delay
            run.platform.start(victim)
            if run.live_on:
                await run.check_live_models(after="celery_worker_kill")
            if status == "running":
                break
            missed += 1  # the retrain ended before the kill: once more
        # The dead worker's claim on the project ends by itself; then the next retrain.
        lock_free = await self.until(
            lambda: run.db_value(run.LOCK_FREE, [run.target_project]), timeout=120
        )
        succeeded = None
        deadline = now() + 180
        while now() < deadline and succeeded is None:
            await run.feed_target()
            await run.manager_retrain(run.target_project)
            succeeded = await self.until(
                lambda: run.db_value(run.SUCCEEDED_AFTER, [running, run.target_project]),
                timeout=20,
            )
        fault.back = now()
        fault.detail = {
            "worker": victim,
            "run": running,
            "mid_retrain": status == "running",
            "run_status_after_kill": status,
            "version_before": version_before,
            "version_after": version_after,
            "kills_after_the_retrain_had_ended": missed,
            "lock_free_after_s": None if lock_free is None else round(lock_free - killed_at, 1),
            "next_retrain_succeeded_after_s": (
                None if succeeded is None else round(succeeded - killed_at, 1)
            ),
        }

    async def live_update_kill(self, fault: Fault) -> None:
        """`kill -9` of a Celery worker in the middle of a live update (its log shows the update
        received and not ended; `TaskLog`), started again a second later, then the live models
        checked. A kill that came after the update had ended is tried again (twice)."""
        run = self.run
        missed = 0
        for _ in range(3):
            deadline, underway = now() + 60, None
            while underway is None and now() < deadline:
                underway = await asyncio.to_thread(run.live_update_underway)
                await asyncio.sleep(0.05)
            if underway is None:
                fault.detail = {"mid_update": False, "why": "no live update started within 60 s"}
                fault.reference = fault.back = now()
                return
            victim, task = underway
            await asyncio.sleep(self.rng.uniform(0.1, 1.0))  # somewhere into the update
            run.platform.kill(victim)
            fault.reference = now()
            ended = task not in run.task_logs[victim].running()
            run.task_logs[victim].forget()  # its update is redelivered, under the same id
            await asyncio.sleep(1.0)  # a restart policy's delay
            run.platform.start(victim)
            fault.back = now()
            await run.check_live_models(after="live_update_kill")
            if not ended:
                break
            missed += 1
        fault.detail = {
            "worker": victim, "task": task, "mid_update": not ended,
            "kills_after_the_update_had_ended": missed,
        }  # fmt: skip

    async def retrain_underway(self) -> int | None:
        """Ask for a retrain (again every 10 s: a request finding the project locked is
        skipped) until one is running; its id, or None after 90 s."""
        run = self.run
        deadline = now() + 90
        asked = 0.0
        while now() < deadline:
            if now() - asked > 10:
                await run.feed_target()
                await run.manager_retrain(run.target_project)
                asked = now()
            running = await asyncio.to_thread(
                run.db_value, run.LIVE_RUN, [self.killed or [0], run.target_project]
            )
            if running:
                return running
            await asyncio.sleep(0.05)
        return None

    @staticmethod
    async def until(check, *, timeout: float) -> float | None:
        """When `check()` (run in a thread) first turns true; None after `timeout` seconds."""
        deadline = now() + timeout
        while now() < deadline:
            if await asyncio.to_thread(check):
                return now()
            await asyncio.sleep(0.2)
        return None

    async def redis_restart(self, fault: Fault) -> None:
        redis = self.run.redis
        await asyncio.to_thread(redis.stop)
        fault.reference = now()
        await asyncio.sleep(self.outage)
        await asyncio.to_thread(redis.start)
        fault.back = now()
        fault.detail = {"down_s": round(fault.back - fault.reference, 2)}

    async def postgres_restart(self, fault: Fault) -> None:
        postgres = self.run.postgres
        await asyncio.to_thread(postgres.stop, "immediate")
        stopped = now()
        await asyncio.sleep(self.outage)
        await asyncio.to_thread(postgres.start)
        fault.back = fault.reference = now()  # pg_ctl -w: accepting connections again
        fault.detail = {"down_s": round(fault.back - stopped, 2)}


class TaskLog:
    """The live updates a Celery worker is running, read from its log as it grows (Celery logs
    each task received and ended; with one process and a prefetch of one, received is
    started)."""

    LINE = re.compile(r"Task learning\.live_update\[([0-9a-f-]+)\] (\w+)")

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.open = path, 0, set()

    def running(self) -> set[str]:
        if self.path.exists():
            with self.path.open("rb") as log:
                log.seek(self.offset)
                chunk = log.read()
            whole = chunk.rfind(b"\n") + 1  # a line being written is read next time
            self.offset += whole
            for task, what in self.LINE.findall(chunk[:whole].decode("utf-8", "replace")):
                (self.open.add if what == "received" else self.open.discard)(task)
        return set(self.open)

    def forget(self) -> None:
        """The worker was killed: nothing runs in it any more."""
        self.running()
        self.open.clear()


# The run -----------------------------------------------------------------------------------------


class Run:
    CURRENT_VERSION = (
        "SELECT coalesce(max(number), 0) FROM learning_modelversion WHERE project_id = %s"
    )
    LAST_RUN = "SELECT coalesce(max(id), 0) FROM learning_retrainrun"
    # A retrain underway: running, not one whose worker was killed, its project's lock held.
    LIVE_RUN = (
        "SELECT r.id FROM learning_retrainrun r JOIN learning_retrainlock l "
        "ON l.project_id = r.project_id WHERE r.status = 'running' AND r.id <> ALL(%s) "
        "AND r.project_id = %s AND l.locked_until > now() ORDER BY r.id DESC LIMIT 1"
    )
    LOCK_FREE = (
        "SELECT coalesce(bool_and(locked_until IS NULL OR locked_until < now()), true) "
        "FROM learning_retrainlock WHERE project_id = %s"
    )
    SUCCEEDED_AFTER = (
        "SELECT count(*) > 0 FROM learning_retrainrun "
        "WHERE status = 'succeeded' AND id > %s AND project_id = %s"
    )

    def __init__(
        self,
        *,
        platform: Platform,
        postgres: Postgres,
        redis: Redis,
        database_url: str,
        seeded: dict,
        behaviour: Behaviour,
        seed: int,
        log,
        media_root: Path,
        live_on: bool,
    ) -> None:
        self.platform, self.postgres, self.redis = platform, postgres, redis
        self.database_url = database_url
        self.port = platform.port
        self.seeded = seeded
        self.gold = seeded["gold"]
        self.lease_seconds = seeded["lease_seconds"]
        self.behaviour = behaviour
        self.seed = seed
        self.log = log
        self.media_root = media_root
        self.live_on = live_on
        self.kinds = KINDS if live_on else tuple(k for k in KINDS if k != "live_update_kill")
        # The live models (when on): checked after every Celery kill and at the end, and
        # followed meanwhile: the highest update seen of each (project, batch version).
        self.live_checks: list[dict] = []
        self.live_updates_seen: dict[tuple[int, int], int] = {}
        self.task_logs = {
            name: TaskLog(platform.logs / f"{name}.log")
            for name in platform.services
            if name.startswith("worker")
        }
        self.history = History()
        self.stop_at = float("inf")  # the phones stop then (set once every fault is over)
        self.next_path = f"/api/projects/{seeded['project']}/tasks/next/"
        self.manager_headers = f"Authorization: Token {seeded['manager_token']}\r\n"
        self.manager_headers += "".join(f"{k}: {v}\r\n" for k, v in PROXY_HEADERS.items())
        self.wall_offset = time.time() - time.monotonic()
        # The small project whose retrains the Celery kills interrupt (they take seconds there,
        # minutes on the phones' project once it holds 100,000 answers).
        self.target_project = seeded["target"]["project"]
        self.target_headers = f"Authorization: Token {seeded['target']['token']}\r\n"
        self.target_headers += "Content-Type: application/json\r\n"
        self.target_headers += "".join(f"{k}: {v}\r\n" for k, v in PROXY_HEADERS.items())

    def db_value(self, sql: str, params: list | None = None):
        """One value from the platform's database; None while it is unreachable."""
        try:
            with psycopg.connect(self.database_url, connect_timeout=2) as conn:
                row = conn.execute(sql, params or []).fetchone()
        except psycopg.OperationalError:
            return None
        return row[0] if row else None

    async def db_value_when_up(self, sql: str, params: list, timeout: float = 60.0):
        """`db_value`, tried again while the database is unreachable (None after `timeout`)."""
        deadline = now() + timeout
        while True:
            value = await asyncio.to_thread(self.db_value, sql, params)
            if value is not None or now() > deadline:
                return value
            await asyncio.sleep(0.2)

    async def check_live_models(self, *, after: str, timeout: float = 60.0) -> None:
        """`live_model_check` once the database answers, recorded in `live_checks`."""
        deadline = now() + timeout
        while True:
            try:
                models = await asyncio.to_thread(
                    live_model_check, self.database_url, self.media_root
                )
                break
            except psycopg.OperationalError as exc:
                if now() > deadline:
                    models = [{"violations": [f"not checked: the database is away ({exc})"]}]
                    break
                await asyncio.sleep(0.5)
        self.live_checks.append(
            {"after": after, "at_s": round(now() - self.history.started, 1), "models": models}
        )

    async def follow_live_models(self, every: float = 1.0) -> None:
        while now() < self.stop_at:
            await asyncio.to_thread(self.note_live_updates)
            await asyncio.sleep(every)

    def note_live_updates(self) -> None:
        try:
            with psycopg.connect(self.database_url, connect_timeout=2) as conn:
                rows = conn.execute(
                    "SELECT project_id, base_version, number FROM learning_livemodel"
                ).fetchall()
        except psycopg.OperationalError:
            return  # the database is being restarted: the next look
        for project, base, number in rows:
            key = (project, base)
            self.live_updates_seen[key] = max(number, self.live_updates_seen.get(key, 0))

    def live_update_underway(self) -> tuple[str, str] | None:
        """(worker, task id) of a live update running now, if any."""
        for name, log in self.task_logs.items():
            running = log.running()
            if running and self.platform.running(name):
                return name, min(running)
        return None

    def retraining_worker(self) -> str:
        """The Celery worker whose process holds the project's retrain lock (the lock's owner
        names its host and process id); failing that, the one using the most CPU now."""
        names = [name for name in self.platform.services if name.startswith("worker")]

        def tree(name: str) -> list[int]:
            pid = self.platform.pid(name)
            return [] if pid is None else [pid, *children(pid)]

        owner = self.db_value(
            "SELECT owner FROM learning_retrainlock WHERE locked_until > now() AND project_id = %s",
            [self.target_project],
        )
        parts = (owner or "").split(":")
        if len(parts) == 3 and parts[1].isdigit():
            for name in names:
                if int(parts[1]) in tree(name):
                    return name
        before = {name: sum(cpu_seconds(p) for p in tree(name)) for name in names}
        time.sleep(0.3)
        return max(names, key=lambda n: sum(cpu_seconds(p) for p in tree(n)) - before[n])

    async def manager_retrain(self, project: int | None = None) -> None:
        """The manager's "Retrain now" of `project` (default: the phones'), on a connection of
        its own each time."""
        started = now()
        path = f"/api/projects/{project or self.seeded['project']}/retrain/"
        manager = Connection(self.port, self.manager_headers, timeout=REQUEST_TIMEOUT)
        try:
            status, _ = await manager.request("POST", path)
            outcome = "ok" if status < 400 else f"{status // 100}xx:{status}"
        except TimeoutError:
            outcome = "timeout"
        except (OSError, asyncio.IncompleteReadError):
            outcome = "connection"
        finally:
            manager.close()
        self.history.attempts.append(Attempt("retrain", started, now(), outcome))

    async def feed_target(self) -> None:
        """One more exact answer in the target project, so that a retrain there is due."""
        connection = Connection(self.port, self.target_headers, timeout=REQUEST_TIMEOUT)
        try:
            next_path = f"/api/projects/{self.target_project}/tasks/next/"
            status, payload = await connection.request("POST", next_path, b"{}")
            if status != 200:
                return
            task = json.loads(payload)
            start, length = task["window"]["start"], task["window"]["length"]
            gold = self.gold.get(gold_key(task["tokens"]), [])[start : start + length]
            body = {
                "assignment": task["assignment"],
                "counts": {t["name"]: gold.count(t["name"]) for t in task["tags"]},
                "idempotency_key": f"target-{task['assignment']}",
            }
            await connection.request("POST", "/api/observations/", json.dumps(body).encode())
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            return  # the stack is being broken on the other track: the next call adds one
        finally:
            connection.close()

    async def retrain_now_and_then(self, every: float) -> None:
        while now() + every < self.stop_at:
            await asyncio.sleep(every)
            await self.manager_retrain()

    async def main(self, *, seconds: float, per_kind: int, outage: float, drain: float) -> None:
        phones = [
            Phone(self, i, token, annotator, self.seed * 1000 + i)
            for i, (token, annotator) in enumerate(
                zip(self.seeded["tokens"], self.seeded["annotators"], strict=True)
            )
        ]
        self.history.started = start = now()
        planned = start + seconds
        # Calm at both ends (a baseline in the same run), the faults in between.
        calm = min(30.0, seconds * 0.1)
        self.stop_at = float("inf")
        injector = FaultInjector(self, per_kind=per_kind, outage_seconds=outage)

        async def faults() -> None:
            await injector.inject(start + calm, planned - calm)
            self.stop_at = max(planned, now() + calm)

        await asyncio.gather(
            *(phone.live(planned) for phone in phones),
            faults(),
            self.retrain_now_and_then(every=max(5.0, seconds / 20)),
            self.follow_live_models(),
        )
        self.history.ended = now()
        self.log("load stopped; phones send what they still hold")
        await asyncio.gather(*(phone.drain(now() + drain) for phone in phones))

    def wait_for_retrain(self, after_run: int, timeout: float) -> float | None:
        """Seconds until a retrain started after run `after_run` succeeds (None: not in time)."""
        started = now()
        while now() - started < timeout:
            done = self.db_value(
                "SELECT count(*) FROM learning_retrainrun WHERE status = 'succeeded' AND id > %s",
                [after_run],
            )
            if done:
                return now() - started
            time.sleep(0.5)
        return None


def check_history(run: Run, media_root: Path) -> dict:
    """The end-of-run checks against the database (the load has stopped)."""
    from learning.core.modelfile import ModelFileError, load_tagger

    history = run.history
    names = run.seeded["tags"]
    with psycopg.connect(run.database_url) as conn:
        rows = conn.execute(
            "SELECT o.annotator_id, o.idempotency_key, o.assignment_id, o.tags, o.counts, "
            "a.task_id FROM annotation_observation o "
            "JOIN annotation_assignment a ON a.id = o.assignment_id WHERE o.project_id = %s",
            [run.seeded["project"]],
        ).fetchall()
        per_task_redundancy = dict(
            conn.execute(
                "SELECT t.id, p.redundancy FROM annotation_task t "
                "JOIN annotation_project p ON p.id = t.project_id WHERE NOT t.is_gold"
            ).fetchall()
        )
        versions = conn.execute(
            "SELECT v.number, v.file, r.version_id IS NOT NULL FROM learning_modelversion v "
            "LEFT JOIN learning_accuracyreport r ON r.version_id = v.id ORDER BY v.number"
        ).fetchall()
        runs = conn.execute(
            "SELECT status, count(*) FROM learning_retrainrun GROUP BY status"
        ).fetchall()
        flagged = conn.execute(
            "SELECT count(*) FROM annotation_membership WHERE flagged"
        ).fetchone()[0]
    stored: dict[tuple[int, str], list] = defaultdict(list)
    per_assignment = Counter()
    per_task = Counter()
    for annotator, key, assignment, tags, counts, task in rows:
        answer = {names[t]: c for t, c in zip(tags, counts, strict=True)}
        stored[(annotator, key)].append((assignment, answer))
        per_assignment[assignment] += 1
        per_task[task] += 1
    acknowledged = {k: a for k, a in history.answers.items() if a.acked_at is not None}
    lost = [k for k in acknowledged if k not in stored]
    altered = [
        k
        for k, a in acknowledged.items()
        if k in stored and stored[k][0] != (a.assignment, a.counts)
    ]
    duplicated = sum(len(v) - 1 for v in stored.values() if len(v) > 1)
    duplicated += sum(n - 1 for n in per_assignment.values() if n > 1)
    phantom = [k for k in stored if k not in history.answers]
    late_tasks = Counter()
    task_of = {assignment: task for _, _, assignment, _, _, task in rows}
    for answer in history.answers.values():
        if answer.late and answer.assignment in task_of:
            late_tasks[task_of[answer.assignment]] += 1
    over = {
        task: n
        for task, n in per_task.items()
        if task in per_task_redundancy and n > per_task_redundancy[task] + late_tasks[task]
    }
    loadable = 0
    for _, name, _ in versions:
        try:
            load_tagger(media_root / name)
            loadable += 1
        except (OSError, ModelFileError):
            pass
    rejected = Counter(a.rejected.split(" ", 1)[0] for a in history.answers.values() if a.rejected)
    return {
        "acknowledged": len(acknowledged),
        "stored": len(rows),
        "lost": len(lost),
        "duplicated": duplicated,
        "altered": len(altered),
        "stored_but_never_sent": len(phantom),
        "sent_never_acknowledged": sum(
            1 for a in history.answers.values() if a.acked_at is None and not a.rejected
        ),
        "rejected_by_status": dict(rejected),
        "regions_over_redundancy": len(over),
        "late_answers_stored": sum(late_tasks.values()),
        "flagged_annotators": flagged,
        "model_versions": len(versions),
        "model_versions_complete": sum(1 for *_, complete in versions if complete),
        "model_versions_loadable": loadable,
        "retrain_runs": dict(runs),
        "examples": {
            "lost": [list(k) for k in lost[:5]],
            "altered": [list(k) for k in altered[:5]],
            "stored_but_never_sent": [list(k) for k in phantom[:5]],
            "over_redundancy": list(over.items())[:5],
        },
    }


def live_figures(run: Run, update_seconds: int) -> dict:
    """The live models' publications seen and their checks (`devtools.live_check`)."""
    run.note_live_updates()
    violations = [
        {"after": check["after"], "at_s": check["at_s"], **model}
        for check in run.live_checks
        for model in check["models"]
        if model["violations"]
    ]
    kills = [f for f in run.history.faults if f.kind in WORKER_KINDS and "worker" in f.detail]
    missed = ("kills_after_the_retrain_had_ended", "kills_after_the_update_had_ended")
    return {
        "update_seconds": update_seconds,
        "celery_kills": sum(1 + sum(f.detail.get(key, 0) for key in missed) for f in kills),
        "kills_mid_update": sum(1 for f in kills if f.detail.get("mid_update")),
        "publications_seen": sum(run.live_updates_seen.values()),
        "batch_versions_followed": len(run.live_updates_seen),
        "checks": len(run.live_checks),
        "checks_after_celery_kills": sum(
            1 for check in run.live_checks if check["after"] in WORKER_KINDS
        ),
        "live_models_checked": sum(len(check["models"]) for check in run.live_checks),
        "publications_checked": sum(
            model.get("publications", 0) for check in run.live_checks for model in check["models"]
        ),
        "most_late_commits_in_a_check": max(
            (m.get("late_commits", 0) for check in run.live_checks for m in check["models"]),
            default=0,
        ),
        "violations": len(violations),
        "violation_examples": violations[:5],
        "checked": [
            {
                "after": check["after"],
                "at_s": check["at_s"],
                **{
                    str(m.get("project")): [m.get("publications"), m.get("answers_applied")]
                    for m in check["models"]
                },
            }
            for check in run.live_checks
        ],
    }


def history_record(history: History) -> dict:
    """The history as JSON-ready lists, times in seconds from the run's start (for `--keep`)."""

    def at(moment: float | None) -> float | None:
        return None if moment is None else round(moment - history.started, 4)

    return {
        "faults": [
            {
                "kind": f.kind,
                "started": at(f.started),
                "back": at(f.back),
                "end": at(f.end),
                "detail": f.detail,
            }
            for f in history.faults
        ],
        "attempts": [
            [a.phone, a.what, at(a.started), at(a.ended), a.outcome] for a in history.attempts
        ],
        "offline": [[phone, at(went), at(until)] for phone, went, until in history.offline],
        "answers": [
            {
                "phone": a.phone,
                "key": a.key,
                "sends": a.sends,
                "acked_at": at(a.acked_at),
                "late": a.late,
                "rejected": a.rejected,
            }
            for a in history.answers.values()
        ],
    }


def _away(history: History, phone: int, since: float, until: float) -> float:
    """How long `phone` was offline by its own choice between the two moments: not trying, it
    was not refused."""
    return sum(
        max(0.0, min(back, until) - max(went, since))
        for who, went, back in history.offline
        if who == phone
    )


def window_figures(history: History) -> dict:
    """5xx and other failures by fault window, the longest refusal after each kind of fault,
    and the cycle rate outside fault windows. A request counts where it ended (when its failure
    was seen); a web-tier fault's window comes first where it overlaps a worker kill's."""
    faults = sorted(history.faults, key=lambda f: f.started)
    web = [f for f in faults if f.kind not in WORKER_KINDS]
    workers = [f for f in faults if f.kind in WORKER_KINDS]

    def window_of(moment: float) -> str:
        for group in (web, workers):
            for fault in group:
                if fault.started <= moment <= fault.end:
                    return fault.kind
        return "calm"

    by_window: dict[str, Counter] = defaultdict(Counter)
    for attempt in history.attempts:
        if attempt.outcome != "ok":
            by_window[window_of(attempt.ended)][attempt.outcome] += 1
    submits = [a for a in history.attempts if a.what == "submit"]
    by_phone: dict[int, list[Attempt]] = defaultdict(list)
    for attempt in sorted(submits, key=lambda a: a.ended):
        by_phone[attempt.phone].append(attempt)
    refusal: dict[str, float] = {kind: 0.0 for kind in KINDS}
    redis_refused = 0
    for fault in faults:
        # How long a phone was refused: each run of failed answers that begins in the fault's
        # window lasts from its first failure (or the reference moment, if the phone was
        # failing already) to the phone's next stored answer. A phone served again and failing
        # later (a duplicate send on a stale spare connection) starts a new run.
        for attempts in by_phone.values():
            since = None
            for attempt in attempts:
                in_window = fault.reference <= attempt.ended <= fault.end
                if attempt.failed and since is None:
                    if in_window and window_of(attempt.ended) == fault.kind:
                        since = max(fault.reference, attempt.started)
                elif attempt.outcome == "ok" and since is not None:
                    length = (
                        attempt.ended - since - _away(history, attempt.phone, since, attempt.ended)
                    )
                    refusal[fault.kind] = max(refusal[fault.kind], length)
                    since = None
            if since is not None:  # never served again
                length = (
                    history.ended - since - _away(history, attempts[0].phone, since, history.ended)
                )
                refusal[fault.kind] = max(refusal[fault.kind], length)
        if fault.kind == "redis_restart":
            redis_refused += sum(
                1
                for a in submits
                if a.failed
                and fault.started <= a.ended <= fault.end
                and window_of(a.ended) == fault.kind
            )
    covered, reach = 0.0, history.started
    for fault in faults:  # the union of the windows, within the run
        begin, end = max(fault.started, reach), min(fault.end, history.ended)
        if end > begin:
            covered += end - begin
            reach = end
    calm_time = history.ended - history.started - covered
    calm_acks = [a for a in submits if a.outcome == "ok" and window_of(a.ended) == "calm"]
    latencies = [a.ended - a.started for a in calm_acks]
    return {
        "http_failures_by_window": {k: dict(v) for k, v in sorted(by_window.items())},
        "http_5xx_by_window": {
            k: sum(n for outcome, n in v.items() if outcome.startswith("5xx"))
            for k, v in sorted(by_window.items())
        },
        "longest_refusal_seconds": {k: round(v, 2) for k, v in refusal.items()},
        "answers_refused_during_redis_outage": redis_refused,
        "calm_seconds": round(max(calm_time, 0.0), 1),
        "cycles_per_second_calm": round(len(calm_acks) / calm_time, 1) if calm_time > 0 else None,
        "submit_p99_ms_calm": round(percentile(latencies, 0.99) * 1000, 1),
    }


def retrain_figures(run: Run) -> dict:
    """Did retraining resume after each fault, and how long after; did the previous model stay
    current while a killed retrain was underway."""
    with psycopg.connect(run.database_url) as conn:
        done = [
            (started.timestamp(), finished.timestamp())
            for started, finished in conn.execute(
                "SELECT started_at, finished_at FROM learning_retrainrun "
                "WHERE status = 'succeeded' ORDER BY finished_at"
            ).fetchall()
        ]
        final = dict(conn.execute("SELECT id, status FROM learning_retrainrun").fetchall())
    resume: dict[str, float | None] = {kind: 0.0 for kind in KINDS}
    unresumed = []
    for fault in run.history.faults:
        wall = fault.reference + run.wall_offset
        after = [finished - wall for started, finished in done if started >= wall]
        if not after:
            unresumed.append(fault.kind)
            resume[fault.kind] = None
        elif resume[fault.kind] is not None:
            resume[fault.kind] = round(max(resume[fault.kind], min(after)), 1)
    kills = [f for f in run.history.faults if f.kind == "celery_worker_kill"]
    # Killed mid-retrain: the run was underway when its worker died, and never finished (if it
    # did, the kill hit the other worker).
    mid = [
        f
        for f in kills
        if f.detail.get("mid_retrain") and final.get(f.detail["run"]) != "succeeded"
    ]
    lock_free = [f.detail.get("lock_free_after_s") for f in mid]
    next_ok = [f.detail.get("next_retrain_succeeded_after_s") for f in mid]
    return {
        "celery_kills_mid_retrain": len(mid),
        "celery_kills_of_the_wrong_worker": sum(
            1 for f in kills if f.detail.get("mid_retrain") and f not in mid
        ),
        "previous_model_stayed_current": all(
            f.detail["version_after"] == f.detail["version_before"] for f in mid
        ),
        "next_retrain_succeeded_after_each_kill": bool(mid) and None not in next_ok,
        "longest_seconds_until_a_killed_workers_lock_ended": max(
            (x for x in lock_free if x is not None), default=None
        ),
        "longest_seconds_from_kill_to_next_successful_retrain": max(
            (x for x in next_ok if x is not None), default=None
        ),
        "retraining_resumed_after_each_fault": not unresumed,
        "faults_not_followed_by_a_retrain": dict(Counter(unresumed)),
        "longest_seconds_to_next_retrain": resume,
    }
