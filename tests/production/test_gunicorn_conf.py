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
