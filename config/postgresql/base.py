"""Django's PostgreSQL backend, with a health check that costs no round trip, made before each
use of a kept connection outside a transaction.

Processes keep their connections: web threads between requests (`CONN_MAX_AGE`), Celery workers
for a whole task, beat for good. When PostgreSQL restarts (a crash, a failover, a deploy), every
kept connection is dead. Without a check, each one failed the next request that used it (after
one restart, `benchmark_faults` counted a 500 for each of gunicorn's 16 threads), and a retrain
whose fit outlasted a restart failed at its final write and started over from nothing. Django's
own check (`CONN_HEALTH_CHECKS`) sends `SELECT 1` at the start of each request: a round trip
more on the annotator's one-statement requests, and nothing for a long task.

This check asks the operating system instead: a connection that is idle has nothing to read,
unless the server closed it (end of file) or said something first (a termination notice). Then
the connection is dropped and a new one opened. It runs whenever Django is about to use the
connection while no transaction is open (in autocommit mode), so nothing of a transaction can be
lost by reconnecting; a connection lost inside a transaction still fails it, as it must.
"""

import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
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
        # Between requests (and Celery tasks): a dead connection is only dropped here; the next
        # use opens a new one inside the request, where a database still away is a 503.
        if self.connection is not None and not self.in_atomic_block and not self.is_usable():
            self.close()
        super().close_if_unusable_or_obsolete()

    def ensure_connection(self):
        if (
            self.connection is not None
            and self.autocommit
            and not self.in_atomic_block
            and not self.is_usable()
        ):
            self.close()
        super().ensure_connection()
