"""Production web server settings, read by `gunicorn config.wsgi` from this directory.

Threaded workers for short requests. The server-sent event streams of open dashboards are not
served here in production: the proxy routes `/api/projects/{id}/events/` to the event server
(uvicorn, `config.asgi`), where a waiting stream holds no thread (docker-compose.yml,
deploy/nginx.conf.template). A stream that reaches gunicorn anyway still works, holding one of
these threads for its `TALLY_SSE_STREAM_SECONDS`.
"""

import os

bind = os.environ.get("TALLY_BIND", "0.0.0.0:8000")
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
workers = int(os.environ.get("WEB_WORKERS") or max(2, _cores()))
threads = int(os.environ.get("WEB_THREADS") or 8)
timeout = int(os.environ.get("WEB_TIMEOUT", "60"))
graceful_timeout = 20
keepalive = 5
# Recycle workers now and then, staggered, as a guard against slow leaks. Not too often: a
# recycled worker drops its keep-alive connections and opens new database connections, and until
# its replacement is up the others carry its load (at 5,000 this happened to every worker within
# a 20-second benchmark).
max_requests = int(os.environ.get("WEB_MAX_REQUESTS", "100000"))
max_requests_jitter = max_requests // 10
# The proxy in front (deploy/nginx.conf.template) logs every request already; a second line per
# request from here cost the annotator cycle about a twentieth of its CPU (`benchmark_api`).
# WEB_ACCESS_LOG=1 turns it on, for gunicorn served without the proxy.
accesslog = "-" if os.environ.get("WEB_ACCESS_LOG", "") in {"1", "true", "yes"} else None
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# gunicorn's control socket (for `gunicornc`) defaults to one path per user ($HOME/.gunicorn/
# gunicorn.ctl or $XDG_RUNTIME_DIR/gunicorn.ctl), shared by every instance that user starts: a
# second server on the machine (a benchmark's, a test's) takes it over, and `gunicornc` then
# commands the wrong one, or none once that one exits. Tally needs no control socket: off unless
# WEB_CONTROL_SOCKET names a path for this instance.
control_socket_disable = not os.environ.get("WEB_CONTROL_SOCKET")
if not control_socket_disable:
    control_socket = os.environ["WEB_CONTROL_SOCKET"]
