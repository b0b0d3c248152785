"""The ASGI application, which production's event server (uvicorn) runs for the event streams.

Django's own ASGI handler gives every request a thread of its own for synchronous code and keeps
it until the response ends: for a server-sent event stream, for the stream's whole life. Here all
requests share one such thread instead, so an open stream waits on the event loop and holds no
thread. Their synchronous parts (authentication, permission checks, a few short queries as a
stream opens and when a report arrives) are brief; the annotators' API stays on gunicorn, which
is why production routes only `/api/projects/{id}/events/` here (docker-compose.yml).
"""

import os
from concurrent.futures import ThreadPoolExecutor

import django
from asgiref.sync import ThreadSensitiveContext
from django.core.handlers.asgi import ASGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


class SharedThreadASGIHandler(ASGIHandler):
    """Django's ASGI handler with one thread for every request's synchronous code."""

    def __init__(self) -> None:
        super().__init__()
        self.sync_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="django-sync")

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        async with ThreadSensitiveContext(executor=self.sync_executor):
            await self.handle(scope, receive, send)


django.setup(set_prefix=False)
application = SharedThreadASGIHandler()
