"""The annotator load of the benchmarks: phones doing the annotator cycle against a running
server, in phases whose requests count once every phone is connected, and what it cost in CPU.

Shared by `benchmark_api` (the cycle, with and without dashboards' event streams) and
`benchmark_scale` (the cycle with 10,000 and with 1,000,000 stored answers).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import time
from dataclasses import dataclass

import psycopg

from devtools.phones import Connection, gold_key, percentile
from devtools.stack import children, cpu_seconds


class CpuMeter:
    """CPU seconds spent by the server (gunicorn master and workers), the scratch database's
    PostgreSQL backends and this load generator: a cost per request that other load on the
    machine does not change much, unlike the request rates."""

    def __init__(self, server_pid: int, admin_url: str, database: str) -> None:
        self.server_pid, self.admin_url, self.database = server_pid, admin_url, database
        self.event_server_pid: int | None = None

    def _pids(self) -> dict[int, str]:
        with psycopg.connect(self.admin_url, autocommit=True) as admin:
            backends = admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s", [self.database]
            ).fetchall()
        pids = {pid: "server" for pid in [self.server_pid, *children(self.server_pid)]}
        if self.event_server_pid is not None:
            pids[self.event_server_pid] = "event_server"
        return pids | {pid: "database" for (pid,) in backends}

    def snapshot(self) -> dict[tuple[str, int], float]:
        cpu = {(kind, pid): cpu_seconds(pid) for pid, kind in self._pids().items()}
        return cpu | {("load_generator", -1): time.process_time()}

    @staticmethod
    def spent(before: dict, after: dict) -> dict[str, float]:
        out = {"server": 0.0, "database": 0.0, "load_generator": 0.0}
        for key, value in after.items():
            out[key[0]] = out.get(key[0], 0.0) + value - before.get(key, 0.0)
        return out


class Stats:
    def __init__(self) -> None:
        self.latencies: dict[str, list[float]] = {"next": [], "submit": [], "ping": []}
        self.errors: dict[str, int] = {}
        self.cycles = 0
        self.no_task = 0

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


@dataclass(frozen=True)
class Phase:
    """When the clients of a phase connect, and when their requests count.

    Client i opens its connection `i * ramp` seconds after the phase starts, as real clients do
    not all connect in the same millisecond (a burst of connections lands most of them on
    whichever server worker wakes first, and its clients then wait on one another). Requests
    count from the moment every client is connected (the window) until `seconds` later.
    """

    started: float
    clients: int
    ramp: float
    seconds: float

    def start_of(self, client: int) -> float:
        return self.started + client * self.ramp

    @property
    def window_start(self) -> float:
        return self.started + self.clients * self.ramp + SETTLE_SECONDS

    @property
    def deadline(self) -> float:
        return self.window_start + self.seconds


SETTLE_SECONDS = 0.2


async def wait_until(moment: float) -> None:
    await asyncio.sleep(max(0.0, moment - time.perf_counter()))


async def cpu_in_window(meter: CpuMeter, phase: Phase) -> dict[str, float]:
    await wait_until(phase.window_start)
    before = await asyncio.to_thread(meter.snapshot)
    await wait_until(phase.deadline)
    return meter.spent(before, await asyncio.to_thread(meter.snapshot))


async def annotator(
    port: int,
    token: str,
    project_id: int,
    phase: Phase,
    client: int,
    stats: Stats,
    seed: int,
    gold: dict[str, list[str]] | None = None,
) -> None:
    """One phone's cycle over keep-alive HTTP; it counts from ``gold`` (tags by
    :func:`devtools.phones.gold_key`) as an exact annotator would, or at random without it."""
    await wait_until(phase.start_of(client))
    connection = Connection(
        port, f"Authorization: Token {token}\r\nContent-Type: application/json\r\n"
    )
    next_path = f"/api/projects/{project_id}/tasks/next/"
    keys = itertools.count()
    rng = random.Random(seed)
    task = None  # the task to answer: from tasks/next/ at first, then from each answer's reply
    try:
        while time.perf_counter() < phase.deadline:
            if task is None:
                started = time.perf_counter()
                status, payload = await connection.request("POST", next_path)
                if started >= phase.window_start:
                    stats.latencies["next"].append(time.perf_counter() - started)
                if status == 204:
                    stats.no_task += 1
                    await asyncio.sleep(0.05)
                    continue
                if status != 200:
                    stats.error(f"next: {status}")
                    continue
                task = json.loads(payload)
            counts = _counts(task, gold, rng)
            # As the phone does: the answer asks for the next task, and its reply carries it.
            body = json.dumps(
                {
                    "assignment": task["assignment"],
                    "counts": counts,
                    "seconds_on_device": 3.0,
                    "idempotency_key": f"{seed}-{next(keys)}",
                    "next": {"holding": []},
                }
            ).encode()
            started = time.perf_counter()
            status, payload = await connection.request("POST", "/api/observations/", body)
            if started >= phase.window_start:
                stats.latencies["submit"].append(time.perf_counter() - started)
                stats.cycles += status == 201
            if status != 201:
                stats.error(f"submit: {status} {payload[:120]!r}")
                task = None
                continue
            task = json.loads(payload)["next"]
    except (OSError, asyncio.IncompleteReadError) as exc:
        stats.error(f"connection: {type(exc).__name__}")
    finally:
        connection.close()


def _counts(task: dict, gold: dict[str, list[str]] | None, rng: random.Random) -> dict:
    """The phone's answer: the window's true counts when its gold tags are known, else random
    counts that fit in the window."""
    window = (gold or {}).get(gold_key(task["tokens"]))
    if window is not None:
        start, length = task["window"]["start"], task["window"]["length"]
        window = window[start : start + length]
        return {tag["name"]: window.count(tag["name"]) for tag in task["tags"]}
    budget, counts = task["max_count"], {}
    for tag in task["tags"]:
        counts[tag["name"]] = value = rng.randint(0, budget)
        budget -= value
    return counts


async def cycle_warm_up(
    port: int, seed: dict, *, clients: int, ramp: float, scratch_url: str
) -> None:
    """Every phone runs the cycle for a second, then the database is ANALYZEd: a live
    platform's tables have planner statistics, kept by autovacuum; statistics taken while the
    assignment and observation tables were still empty make PostgreSQL plan for empty tables."""
    warm, warm_phase = Stats(), Phase(time.perf_counter(), clients, ramp, 1.0)
    await asyncio.gather(
        *(
            annotator(
                port, token, seed["project"], warm_phase, i, warm, 10_000 + i, seed.get("gold")
            )
            for i, token in enumerate(seed["tokens"])
        )
    )
    with psycopg.connect(scratch_url, autocommit=True) as scratch:
        scratch.execute("ANALYZE")  # what autovacuum does on a live platform


async def cycle_measure(
    port: int, seed: dict, *, seconds: float, ramp: float, meter: CpuMeter, round_number: int
) -> dict:
    """Every phone of `seed` does the annotator cycle for `seconds` (after its ramp); the rates,
    latencies and CPU cost. `round_number` keeps the phones' idempotency keys apart from an
    earlier round's. The key `_cpu_per_cycle` is for the caller's own ratios."""
    tokens, project = seed["tokens"], seed["project"]
    stats, cycle_phase = Stats(), Phase(time.perf_counter(), len(tokens), ramp, seconds)
    cycle_cpu_parts, *_ = await asyncio.gather(
        cpu_in_window(meter, cycle_phase),
        *(
            annotator(
                port,
                token,
                project,
                cycle_phase,
                i,
                stats,
                i + round_number * 100_000,
                seed.get("gold"),
            )  # fmt: skip
            for i, token in enumerate(tokens)
        ),
    )
    cycle_cpu = sum(cycle_cpu_parts.values())
    both = stats.latencies["next"] + stats.latencies["submit"]
    ms = 1000.0
    cpus = os.cpu_count() or 1
    cpu_per_cycle = cycle_cpu / stats.cycles if stats.cycles else None
    return {
        "cycles_per_second": round(stats.cycles / seconds, 1),
        "requests_per_second": round(len(both) / seconds, 1),
        # 1 once the clients are going: each answer brings the next task.
        "requests_per_cycle": round(len(both) / stats.cycles, 2) if stats.cycles else None,
        "p99_ms": round(percentile(both, 0.99) * ms, 1),
        "p50_ms": round(percentile(both, 0.50) * ms, 1),
        "next_p99_ms": round(percentile(stats.latencies["next"], 0.99) * ms, 1),
        "submit_p99_ms": round(percentile(stats.latencies["submit"], 0.99) * ms, 1),
        "cycles": stats.cycles,
        "no_task_answers": stats.no_task,
        # CPU cost (server + its database backends + load generator), and what it implies
        # for a machine whose cores do nothing else.
        "cpu_ms_per_cycle": round(cpu_per_cycle * ms, 2) if cpu_per_cycle else None,
        "cpu_ms_per_cycle_by_part": {
            part: round(value / max(stats.cycles, 1) * ms, 2)
            for part, value in cycle_cpu_parts.items()
        },
        "cpu_share_used": round((cycle_cpu / seconds) / cpus, 2),
        "idle_machine_cycles_per_second_estimate": (
            round(cpus / cpu_per_cycle, 1) if cpu_per_cycle else None
        ),
        "_cpu_per_cycle": cpu_per_cycle,
        "errors": dict(stats.errors),
    }
