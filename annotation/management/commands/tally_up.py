"""Start the whole platform on this machine: web server, Celery worker and beat, together.

`./tally up` runs this. It migrates the database, then supervises the three processes and stops
them all cleanly on Ctrl-C (or when one of them dies).
"""

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Start web server, Celery worker and beat on this machine (the embedded default)."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args, host: str, port: int, **options):
        call_command("migrate", interactive=False, verbosity=0)
        python = sys.executable
        commands = {
            "web": [python, "manage.py", "runserver", f"{host}:{port}", "--noreload"],
            "worker": [python, "-m", "celery", "-A", "config", "worker", "-l", "INFO", "-c", "1"],
            "beat": [python, "-m", "celery", "-A", "config", "beat", "-l", "INFO"],
        }
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        processes = {
            name: subprocess.Popen(command, cwd=settings.BASE_DIR, env=env)
            for name, command in commands.items()
        }
        self.stdout.write(f"Tally is running at http://{host}:{port}/  (Ctrl-C stops everything)")
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
