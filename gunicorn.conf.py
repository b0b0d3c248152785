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
max_requests = 5000  # recycle workers now and then, staggered
max_requests_jitter = 500
accesslog = "-"
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
