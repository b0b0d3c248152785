"""Django's PostgreSQL backend, with a health check that costs no round trip.

A web process keeps its connections between requests (`CONN_MAX_AGE`). When PostgreSQL restarts
(a crash, a failover, a deploy), every kept connection is dead, and without a check each one
failed the next request that used it: after one restart, `benchmark_faults` counted a 500 for
each of gunicorn's 16 threads. Django's own check (`CONN_HEALTH_CHECKS`) sends `SELECT 1` at
the start of every request, a round trip more on the annotator's one-statement requests.

This check asks the operating system instead: a connection that is idle between requests has
nothing to read, unless the server closed it (end of file) or said something first (a
termination notice). Then the connection is dropped and the request opens a new one; anything
readable is treated so, which at worst costs a reconnection.
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
