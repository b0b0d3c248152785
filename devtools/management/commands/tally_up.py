"""Start the whole platform on this machine: web server, Celery worker and beat, together.

`./tally up` runs this. It migrates the database, makes the demo project on the first run (see
`devtools.demo`), prints where to go and how to log in, then supervises the three processes and
stops them all cleanly on Ctrl-C (or when one of them dies).
"""

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from devtools.demo import demo_seed


class Command(BaseCommand):
    help = "Start web server, Celery worker and beat on this machine, with the demo project."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-demo", action="store_true", help="skip the demo project")
        parser.add_argument("--demo-sentences", type=int, default=3000)
        parser.add_argument("--demo-answers", type=int, default=3000)

    def handle(self, *args, host: str, port: int, no_demo: bool, **options):
        if not 1 <= options["demo_sentences"] <= 12_544 or options["demo_answers"] < 0:
            raise CommandError("--demo-sentences must be 1..12544 and --demo-answers at least 0")
        call_command("migrate", interactive=False, verbosity=0)
        base = f"http://{host}:{port}"
        if not no_demo:
            demo = demo_seed(
                n_sentences=options["demo_sentences"],
                n_answers=options["demo_answers"],
                log=lambda line: self.stdout.write(f"demo: {line}"),
            )
            logins = demo.logins
            self.stdout.write(
                "\n".join(
                    [
                        "",
                        f"Tally is starting at {base}/",
                        f"  manager:   {logins.manager_username} / {logins.manager_password}"
                        f"   → {base}/projects/{demo.project_id}/",
                        f"  annotator: {logins.annotator_username} / {logins.annotator_password}"
                        f"   → {base}/annotate/{demo.project_id}/ (on a phone, or a narrow window)",
                        f"  invite others with {base}/join/{demo.invite_code}",
                        f"  API docs:  {base}/api/docs/     admin: {base}/admin/",
                        f"  demo: {demo.observations} answers so far, model version "
                        f"{demo.model_version}",
                        "Ctrl-C stops everything.",
                        "",
                    ]
                )
            )
        python = sys.executable
        commands = {
            "web": [python, "manage.py", "runserver", f"{host}:{port}", "--noreload"],
            "worker": [python, "-m", "celery", "-A", "config", "worker", "-l", "INFO", "-c", "1"],
            "beat": [python, "-m", "celery", "-A", "config", "beat", "-l", "INFO",
                     "--schedule", str(settings.DATA_DIR / "celerybeat-schedule")],
        }  # fmt: skip
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        processes = {
            name: subprocess.Popen(command, cwd=settings.BASE_DIR, env=env)
            for name, command in commands.items()
        }
        try:
            while all(process.poll() is None for process in processes.values()):
                time.sleep(0.5)
            dead = [name for name, process in processes.items() if process.poll() is not None]
            self.stderr.write(f"stopped because {', '.join(dead)} exited")
        except KeyboardInterrupt:
            self.stdout.write("stopping…")
        finally:
            for process in processes.values():
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in processes.values():
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
