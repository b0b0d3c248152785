"""Production web server settings, read by `gunicorn config.wsgi` from this directory.

Threaded workers for short requests. The server-sent event streams of open dashboards are not
served here in production: the proxy routes `/api/projects/{id}/events/` to the event server
(uvicorn, `config.asgi`), where a waiting stream holds no thread (docker-compose.yml,
deploy/nginx.conf.template). A stream that reaches gunicorn anyway still works, holding one of
these threads for its `TALLY_SSE_STREAM_SECONDS`.
"""

import os

from config.env import env_bool, env_int, env_str

bind = env_str("TALLY_BIND") or "0.0.0.0:8000"
worker_class = "gthread"


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may run on
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# One process per core (Python runs one thread at a time per process), each with threads that
# overlap its requests' database round trips. On 2 cores,
# `benchmark_api` measured 2 x 8 at less CPU per annotator cycle and a lower p99 than 4 x 8 or
# 5 x 4: more processes than cores only take turns on them.
# The application is loaded once, in the master, and each worker is a fork of it: a worker that
# dies (killed, out of memory, recycled) is replaced in milliseconds instead of the seconds its
# imports take, during which the other workers carried its phones (`benchmark_faults`: refused
# for up to 2.4 s after a worker kill). Nothing opens a connection at import time.
preload_app = True
# An empty value is the default (docker-compose.yml passes `WEB_WORKERS: ${WEB_WORKERS:-}`); a bad
# one stops gunicorn at start with the variable's name (config/env.py).
workers = env_int("WEB_WORKERS", max(2, _cores()), minimum=1)
threads = env_int("WEB_THREADS", 8, minimum=1)
timeout = env_int("WEB_TIMEOUT", 60, minimum=1)
graceful_timeout = 20
keepalive = 5
# Recycle workers now and then, staggered, as a guard against slow leaks. Not too often: a
# recycled worker drops its keep-alive connections and opens new database connections, and until
# its replacement is up the others carry its load (at 5,000 this happened to every worker within
# a 20-second benchmark).
max_requests = env_int("WEB_MAX_REQUESTS", 100_000, minimum=0)
max_requests_jitter = max_requests // 10
# The proxy in front (deploy/nginx.conf.template) logs every request already; a second line per
# request from here cost the annotator cycle about a twentieth of its CPU (`benchmark_api`).
# WEB_ACCESS_LOG=1 turns it on, for gunicorn served without the proxy.
accesslog = "-" if env_bool("WEB_ACCESS_LOG", False) else None
errorlog = "-"
forwarded_allow_ips = env_str("FORWARDED_ALLOW_IPS") or "127.0.0.1"
# gunicorn's control socket (for `gunicornc`) defaults to one path per user ($HOME/.gunicorn/
# gunicorn.ctl or $XDG_RUNTIME_DIR/gunicorn.ctl), shared by every instance that user starts: a
# second server on the machine (a benchmark's, a test's) takes it over, and `gunicornc` then
# commands the wrong one, or none once that one exits. Tally needs no control socket: off unless
# WEB_CONTROL_SOCKET names a path for this instance.
control_socket_disable = not env_str("WEB_CONTROL_SOCKET")
if not control_socket_disable:
    control_socket = env_str("WEB_CONTROL_SOCKET")
