"""A production install (`pip install .`, what the image runs) holds the platform and not the
checkout's tools (issue 43 §6): devtools/ (the demo, the benchmarks) was packaged and in the
production INSTALLED_APPS, and the wheel left out the pages' templates and scripts, which only
worked because the image ran from a copy of the sources.

The wheel is built from a copy of the sources, offline (`--no-build-isolation`: the `[dev]` extra
holds setuptools), unpacked, and imported by an interpreter that sees only it and the venv's
third-party packages (`-S`: no .pth file, so not the checkout's editable install), from a
directory holding what the image's working directory holds. About 15 s on a quiet machine.
"""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.support.servers import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.django_db(databases=[])]

# Run by an interpreter that has the unpacked wheel and the venv's packages only: the web server's
# URLconf and WSGI/ASGI apps, the worker's and beat's task modules, the pages' templates and files.
IMPORT_THE_PLATFORM = """
import json, sys
import django
django.setup()
from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.management import call_command, get_commands
from django.template.loader import get_template
from django.urls import get_resolver
import config, config.asgi, config.wsgi
from config.celery import app

def walk(patterns):
    for pattern in patterns:
        walk(getattr(pattern, "url_patterns", []))

walk(get_resolver().url_patterns)
app.loader.import_default_modules()
call_command("check")
get_template("frontend/annotate.html")
get_template("frontend/annotate-worker.js")
get_template("404.html")
assert finders.find("frontend/js/join.js"), "the pages' scripts are not installed"
print(json.dumps({
    "devtools": sorted(m for m in sys.modules if m.split(".")[0] == "devtools"),
    "config": config.__file__,
    "apps": list(settings.INSTALLED_APPS),
    "commands": sorted(get_commands()),
}))
"""


def _sources(into: Path) -> Path:
    """What a clone holds of the project's Python: every top-level package, devtools and tests
    included, so that leaving them out is the packaging's doing."""
    into.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, into / name)
    for package in ROOT.iterdir():
        if (package / "__init__.py").exists():
            shutil.copytree(
                package, into / package.name, ignore=shutil.ignore_patterns("__pycache__")
            )
    return into


def test_a_production_install_holds_the_platform_and_imports_no_devtools(tmp_path):
    source = _sources(tmp_path / "src")
    assert (source / "devtools" / "__init__.py").exists()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "-q", "-w", str(tmp_path / "dist"), str(source)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("tally-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "site")
    tops = {name.split("/")[0] for name in names}
    packages = {top for top in tops if not top.endswith(".dist-info")}
    assert packages == {
        "accounts", "annotation", "common", "config", "delivery", "frontend", "learning",
    }  # fmt: skip

    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("TALLY_", "DJANGO_", "DATABASE_", "REDIS_", "PYTHON"))
    }
    env |= {
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), sysconfig.get_paths()["purelib"]]),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "TALLY_ENV": "production",
        "SECRET_KEY": "install-test-" + "k" * 40 + "0123456789",
        "ALLOWED_HOSTS": "tally.example.org",
        "TALLY_DATA_DIR": str(tmp_path / "data"),
        "STATIC_ROOT": str(tmp_path / "static"),
    }
    app = tmp_path / "app"  # the image's working directory (Dockerfile): these two files only
    app.mkdir()
    for name in ("manage.py", "gunicorn.conf.py"):
        shutil.copy2(ROOT / name, app / name)

    def run(*arguments: str) -> str:
        done = subprocess.run(
            [sys.executable, "-S", *arguments],
            cwd=app, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-4000:]
        return done.stdout

    seen = json.loads(run("-c", IMPORT_THE_PLATFORM).strip().splitlines()[-1])
    assert seen["config"].startswith(str(tmp_path / "site")), seen["config"]  # the wheel's
    assert seen["devtools"] == []
    assert "devtools" not in seen["apps"]
    assert "tally_up" not in seen["commands"] and "benchmark_api" not in seen["commands"]
    assert "retrain" in seen["commands"]  # the platform's own commands are there

    # The image's manage.py (its collectstatic step) and its web server's settings, from the
    # installed packages alone.
    found = run("manage.py", "findstatic", "frontend/js/join.js", "-v0").strip()
    assert found.startswith(str(tmp_path / "site")), found
    read_config = (
        "from gunicorn.config import Config\n"
        "from gunicorn.app.base import Application\n"
        "class App(Application):\n"
        "    def init(self, *args): return {}\n"
        "    def load(self): return None\n"
        "    def load_config(self):\n"
        "        self.cfg = Config()\n"
        "        self.load_config_from_file('gunicorn.conf.py')\n"
        "print(App().cfg.threads)\n"
    )
    assert run("-c", read_config).split() == ["8"]


def test_the_image_installs_tally_as_pip_does():
    """The image ran from copies of the source directories (a list that had lost `delivery/`
    and held `devtools/`); it now installs the wheel from the build context, which leaves out
    the checkout's tools, data and any local `.env`."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    copies = [line.split()[1:] for line in dockerfile.splitlines() if line.startswith("COPY ")]
    assert copies == [[".", "/src"], ["manage.py", "gunicorn.conf.py", "./"]], copies
    assert "pip install --no-cache-dir /src" in dockerfile
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {"devtools", "tests", "data", ".env", ".venv", ".git", "var"} <= ignored
