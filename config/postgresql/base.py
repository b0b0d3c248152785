"""Django's PostgreSQL backend, with a health check that costs no round trip, made before the
use of a kept connection outside a transaction (at most once a second).

Processes keep their connections: web threads between requests (`CONN_MAX_AGE`), Celery workers
for a whole task, beat for good. When PostgreSQL restarts (a crash, a failover, a deploy), every
kept connection is dead. Without a check, each one failed the next request that used it (after
one restart, `benchmark_faults` counted a 500 for each of gunicorn's 16 threads), and a retrain
whose fit outlasted a restart failed at its final write and started over from nothing. Django's
own check (`CONN_HEALTH_CHECKS`) sends `SELECT 1` at the start of each request: a round trip
more on the annotator's one-statement requests, and nothing for a long task.

This check asks the operating system instead: a connection that is idle has nothing to read,
unless the server closed it (end of file) or said something first (a termination notice). Then
the connection is dropped and a new one opened. It runs when Django is about to use the
connection while no transaction is open (in autocommit mode), so nothing of a transaction can be
lost by reconnecting; a connection lost inside a transaction still fails it, as it must.

The check is a system call, and in a busy threaded worker each system call gives up the
interpreter lock and waits its turn to take it back: made before every use, it cost the annotator
cycle a tenth of its throughput (`benchmark_api`). So a connection checked less than
`RECHECK_SECONDS` ago is not checked again. No restart is that quick (PostgreSQL stopped and
started takes seconds, and a connection used meanwhile fails and is dropped at the end of its
request), so every connection that outlived a restart is still checked before its next use.
"""

import select
import time

from django.db.backends.postgresql import base

RECHECK_SECONDS = 1.0


class DatabaseWrapper(base.DatabaseWrapper):
    checked_at = 0.0  # monotonic time of the last check that found the connection alive

    def connect(self):
        super().connect()
        self.checked_at = time.monotonic()

    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        try:
            readable, _, _ = select.select([connection.fileno()], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def close_if_unusable_or_obsolete(self):
        # Between requests (and Celery tasks) a dead connection is only dropped: reconnecting
        # here, in Django's request_started signal, outside any request's error handling, made
        # a database still away a 500 (benchmark_faults). The next use reconnects inside the
        # request, where it is a 503.
        self._drop_if_dead()
        super().close_if_unusable_or_obsolete()

    def ensure_connection(self):
        self._drop_if_dead()
        super().ensure_connection()

    def _drop_if_dead(self) -> None:
        if self.connection is None or not self.autocommit or self.in_atomic_block:
            return
        now = time.monotonic()
        if now - self.checked_at < RECHECK_SECONDS:
            return
        if self.is_usable():
            self.checked_at = now
        else:
            self.close()
