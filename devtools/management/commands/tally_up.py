"""Start the whole platform on this machine: web server, Celery worker and beat, together.

`./tally up` runs this. It migrates the database, makes the demo project on the first run (see
`devtools.demo`), starts the three processes, and once `/healthz` answers and their start-up has
quietened prints where to go and how to log in: last, so it is on screen, and again whenever
Enter is pressed. Then it supervises them (`devtools.supervisor`: each log line prefixed with its
process) and stops them all on Ctrl-C, SIGTERM, or when one of them dies. Routine lines (the
development server's notices, health checks, the retrain sweep every minute when it finds
nothing to do) are shown only with `--verbose`.
"""

import re
import sys
import threading

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from devtools.demo import demo_seed
from devtools.supervisor import Supervisor

HEALTH_TIMEOUT = 120  # seconds for the web server to answer /healthz after start
QUIET_SECONDS = 1.5  # the banner waits until the children have printed nothing for this long

# Lines that say nothing a newcomer can act on, by process: hidden unless --verbose.
ROUTINE = {
    "web": re.compile(
        r"^$|^Performing system checks|^System check identified|^Quit the server with"
        r"|^WARNING: This is a development server|^For more information on production servers"
        r'|"GET /healthz HTTP/[\d.]+" 200'
    ),
    "beat": re.compile(r"Scheduler: Sending due task retrain-sweep|Schedule changed"),
    "worker": re.compile(
        r"Task learning\.retrain_sweep\[[^\]]+\] received"
        r"|Task learning\.retrain_sweep\[[^\]]+\] succeeded in [\d.]+s: "
        r"\{'queued': \[\], 'redelivered': \[\]\}"
    ),
}


def routine(name: str, line: str) -> bool:
    """Whether `line` from the process `name` is routine (hidden unless --verbose)."""
    pattern = ROUTINE.get(name)
    return bool(pattern and pattern.search(line))


def show_again_on_enter(stream, show) -> threading.Thread:
    """Calls `show()` for every line read from `stream` (Enter in the terminal), until it ends."""

    def read() -> None:
        for _line in stream:
            show()

    thread = threading.Thread(target=read, name="banner-on-enter", daemon=True)
    thread.start()
    return thread


class Command(BaseCommand):
    help = "Start web server, Celery worker and beat on this machine, with the demo project."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-demo", action="store_true", help="skip the demo project")
        parser.add_argument("--demo-sentences", type=int, default=3000)
        parser.add_argument("--demo-answers", type=int, default=3000)
        parser.add_argument(
            "--verbose", action="store_true", help="show routine log lines too (health checks…)"
        )

    def handle(self, *args, host: str, port: int, no_demo: bool, verbose: bool, **options):
        if not 1 <= options["demo_sentences"] <= 12_544 or options["demo_answers"] < 0:
            raise CommandError("--demo-sentences must be 1..12544 and --demo-answers at least 0")
        call_command("migrate", interactive=False, verbosity=0)
        base = f"http://{host}:{port}"
        banner = [
            "",
            f"Tally is up at {base}/  (new project: {base}/projects/new/)",
            f"  API docs:  {base}/api/docs/     admin: {base}/admin/",
            "Enter shows this again; Ctrl-C stops everything.",
            "",
        ]
        if not no_demo:
            demo = demo_seed(
                n_sentences=options["demo_sentences"],
                n_answers=options["demo_answers"],
                log=lambda line: self.stdout.write(f"demo: {line}"),
            )
            logins = demo.logins
            banner[2:2] = [
                f"  manager:   {logins.manager_username} / {logins.manager_password}"
                f"   → {base}/projects/{demo.project_id}/",
                f"  annotator: {logins.annotator_username} / {logins.annotator_password}"
                f"   → {base}/annotate/{demo.project_id}/ (on a phone, or a narrow window)",
                f"  invite others with {base}/join/{demo.invite_code}",
                f"  demo: {demo.observations} answers so far, model version {demo.model_version}",
            ]
        python = sys.executable
        commands = {
            "web": [python, "manage.py", "runserver", f"{host}:{port}", "--noreload",
                    "--skip-checks"],  # checked by migrate above
            # -q: without Celery's start-up banners (45 lines that pushed ours off the screen).
            "worker": [python, "-m", "celery", "-q", "-A", "config", "worker", "-l", "INFO",
                       "-c", "1"],
            "beat": [python, "-m", "celery", "-q", "-A", "config", "beat", "-l", "INFO",
                     "--schedule", str(settings.DATA_DIR / "celerybeat-schedule")],
        }  # fmt: skip
        with Supervisor(
            commands,
            cwd=settings.BASE_DIR,
            out=sys.stdout,
            hide=None if verbose else routine,
            # Django's "This is a development server" notice: nothing a newcomer can act on.
            env={"DJANGO_RUNSERVER_HIDE_WARNING": "true"},
        ) as supervisor:
            if supervisor.wait_healthy(f"http://{host}:{port}/healthz", timeout=HEALTH_TIMEOUT):
                supervisor.wait_quiet(quiet=QUIET_SECONDS, timeout=30)
                supervisor.say("\n".join(banner))
                show_again_on_enter(sys.stdin, lambda: supervisor.say("\n".join(banner)))
            else:
                self.stderr.write(f"{base}/healthz did not answer 200 within {HEALTH_TIMEOUT} s")
            dead = supervisor.run()
            raise CommandError(f"stopped because {', '.join(dead)} exited")
