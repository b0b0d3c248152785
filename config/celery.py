"""The one Celery app of Tally. Periodic schedules are declared in `beat_schedule` below only."""

import os

from celery import Celery
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("tally")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Beat runs with django-celery-beat's DatabaseScheduler: these entries are written to its tables
# at start, where the admin can change their period without a deploy. Per-project retraining
# intervals live in `learning.RetrainSchedule` (see learning/tasks.py for why one sweep).
app.conf.beat_schedule = {
    "retrain-sweep": {
        "task": "learning.retrain_sweep",
        "schedule": float(settings.TALLY_RETRAIN_SWEEP_SECONDS),
        "options": {"expires": max(settings.TALLY_RETRAIN_SWEEP_SECONDS * 0.9, 1.0)},
    },
    # Import jobs whose message was lost (broker down) or whose worker died: queued again.
    "import-sweep": {
        "task": "annotation.import_sweep",
        "schedule": 60.0,
        "options": {"expires": 54.0},
    },
}
# The live models follow the answers (learning/live.py); off with TALLY_LIVE_MODEL_SECONDS=0.
if settings.TALLY_LIVE_MODEL_SECONDS > 0:
    app.conf.beat_schedule["live-sweep"] = {
        "task": "learning.live_sweep",
        "schedule": float(settings.TALLY_LIVE_MODEL_SECONDS),
        "options": {"expires": settings.TALLY_LIVE_MODEL_SECONDS * 0.9},
    }
