"""The WSGI application gunicorn serves: Django's, inside one last guard.

Django turns an exception in a view or a middleware into a response (a database away is a 503:
`common.middleware`), but not one raised before its middleware, in the `request_started` signal,
where Django closes connections that are too old or broken; gunicorn then answers a bare 500. A
lost database there is a 503 with `Retry-After` too.
"""

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()

# What Django would otherwise import on a worker's first request: the URLconf and every view it
# names. Here it is imported once, before gunicorn forks its workers (`preload_app`), so a new
# worker answers its first requests as fast as the others.
get_resolver().url_patterns  # noqa: B018

from common.middleware import database_unavailable, unavailable_wsgi_response  # noqa: E402


def application(environ, start_response):
    try:
        return django_application(environ, start_response)
    except Exception as exc:
        if not database_unavailable(exc):
            raise
        return unavailable_wsgi_response(environ, start_response)
