"""gunicorn.conf.py as gunicorn reads it (issue 24): instances never share a control socket."""

import os
import subprocess
import sys

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db(databases=[])  # reads settings only

READ = """
from gunicorn.config import Config
from gunicorn.app.base import Application
class App(Application):
    def init(self, *args): return {}
    def load(self): return None
    def load_config(self):
        self.cfg = Config()
        self.load_config_from_file("gunicorn.conf.py")
app = App()
print(app.cfg.control_socket_disable, repr(app.cfg.control_socket))
"""


def _control_socket(**env: str) -> tuple[bool, str]:
    environment = {k: v for k, v in os.environ.items() if k != "WEB_CONTROL_SOCKET"} | env
    out = subprocess.run(
        [sys.executable, "-c", READ],
        cwd=settings.BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return out[0] == "True", out[1].strip("'")


def test_instances_do_not_share_a_control_socket():
    """gunicorn's default control socket is one path per user ($HOME/.gunicorn/gunicorn.ctl):
    two servers on one machine took it from each other. Off by default; a path of the
    instance's own when WEB_CONTROL_SOCKET names one."""
    first = _control_socket(TALLY_BIND="127.0.0.1:8000")
    second = _control_socket(TALLY_BIND="127.0.0.1:8100")
    assert first[0] and second[0], (first, second)  # disabled: nothing to share
    assert _control_socket(WEB_CONTROL_SOCKET="/run/tally/web-a.ctl") == (
        False,
        "/run/tally/web-a.ctl",
    )


def _read(**env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("WEB_")} | env
    script = READ.replace(
        "print(app.cfg.control_socket_disable, repr(app.cfg.control_socket))",
        "print(app.cfg.workers, app.cfg.threads, app.cfg.max_requests)",
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=settings.BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
    )


def test_a_bad_value_names_its_variable_and_an_empty_one_is_the_default():
    """gunicorn.conf.py read the environment with bare int(): `WEB_WORKERS=two` stopped gunicorn
    with "invalid literal for int()" and no name. It reads through config/env.py now, as the
    settings do; an empty value (docker-compose's `${WEB_WORKERS:-}`) is the default."""
    assert _read(WEB_WORKERS="3", WEB_THREADS="", WEB_MAX_REQUESTS="500").stdout.split() == [
        "3",
        "8",
        "500",
    ]
    for name in ("WEB_WORKERS", "WEB_THREADS", "WEB_MAX_REQUESTS", "WEB_TIMEOUT"):
        failed = _read(**{name: "two"})
        assert failed.returncode != 0
        assert f"{name}='two' is not a whole number" in failed.stderr, failed.stderr[-2000:]
    assert "WEB_WORKERS=0 must be at least 1" in _read(WEB_WORKERS="0").stderr
