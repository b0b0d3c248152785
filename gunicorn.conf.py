"""Production web server settings, read by `gunicorn config.wsgi` from this directory.

Threaded workers: the API requests are short, and the server-sent event streams of open
dashboards wait on Redis in a thread of their own without holding a process.
"""

import os

bind = os.environ.get("TALLY_BIND", "0.0.0.0:8000")
worker_class = "gthread"
workers = int(os.environ.get("WEB_WORKERS", "4"))
threads = int(os.environ.get("WEB_THREADS", "8"))
timeout = int(os.environ.get("WEB_TIMEOUT", "60"))
graceful_timeout = 20
keepalive = 5
# Recycle workers now and then, staggered, as a guard against slow leaks. Not too often: a
# recycled worker drops its keep-alive connections and opens new database connections, and until
# its replacement is up the others carry its load (at 5,000 this happened to every worker within
# a 20-second benchmark).
max_requests = int(os.environ.get("WEB_MAX_REQUESTS", "100000"))
max_requests_jitter = max_requests // 10
accesslog = "-"
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
