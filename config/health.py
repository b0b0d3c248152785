"""GET /healthz: is this process able to serve? Checks the database and the Celery broker."""

import time

from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from config.celery import app as celery_app


def _check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def _check_broker() -> None:
    with celery_app.connection_for_write() as broker:
        broker.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=2)


@never_cache
@require_GET
def healthz(request):
    checks = {}
    for name, check in (("database", _check_database), ("broker", _check_broker)):
        started = time.perf_counter()
        try:
            check()
        except Exception as exc:  # noqa: BLE001 - any failure means "not healthy"; we say which
            checks[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
        else:
            checks[name] = {"ok": True, "ms": round(1000 * (time.perf_counter() - started), 1)}
    healthy = all(check["ok"] for check in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "unavailable", "checks": checks},
        status=200 if healthy else 503,
    )
