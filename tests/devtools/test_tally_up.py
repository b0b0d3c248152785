"""`./tally up`'s command: migrates, makes the demo, runs web + worker + beat, Ctrl-C stops all."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.processes import child_env
from tests.support.servers import free_port

ROOT = Path(__file__).resolve().parents[2]


def _children(pid: int) -> list[str]:
    out = subprocess.run(["ps", "-o", "args=", "--ppid", str(pid)], capture_output=True, text=True)
    return out.stdout.splitlines()


@pytest.mark.slow
def test_starts_everything_prints_logins_and_stops_cleanly_on_ctrl_c(tmp_path):
    port = free_port()
    env = child_env(TALLY_DATA_DIR=str(tmp_path))
    log = (tmp_path / "up.log").open("w+b")
    up = subprocess.Popen(
        [sys.executable, "manage.py", "tally_up", "--port", str(port),
         "--demo-sentences", "120", "--demo-answers", "80"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert up.poll() is None, (tmp_path / "up.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "up.log").read_text()
            time.sleep(0.5)
        children = _children(up.pid)
        assert any("runserver" in c for c in children)
        assert any("worker" in c for c in children) and any(" beat" in c for c in children)
        # tally_up prints its banner once it has seen /healthz answer itself: a moment after us.
        banner_deadline = time.monotonic() + 30
        output = (tmp_path / "up.log").read_text()
        while "annotator: annotator / " not in output and time.monotonic() < banner_deadline:
            time.sleep(0.2)
            output = (tmp_path / "up.log").read_text()
        assert "manager:   manager / " in output and "annotator: annotator / " in output
        assert f"http://127.0.0.1:{port}/join/" in output

        up.send_signal(signal.SIGINT)  # what Ctrl-C sends
        assert up.wait(timeout=30) is not None
        time.sleep(0.5)
        assert _children(up.pid) == []
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
    finally:
        if up.poll() is None:
            up.kill()


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_tally_up_alone_stops_every_child(tmp_path, signum):
    """Issue 17: `kill PID` (SIGTERM) left runserver, the worker and beat running, and the next
    `./tally up` failed with "port is already in use". Here only tally_up gets the signal (not
    its process group, as a terminal's Ctrl-C would): it must stop its children itself."""
    port = free_port()
    log_path = tmp_path / "up.log"
    up = subprocess.Popen(
        [sys.executable, "manage.py", "tally_up", "--port", str(port), "--no-demo"],
        cwd=ROOT, env=child_env(TALLY_DATA_DIR=str(tmp_path)),
        stdout=log_path.open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        # The banner, the worker's "celery@host ready." and beat's "beat: Starting..." (each
        # child starts on its own clock: a signal sent before beat has said anything leaves it
        # nothing to say, which is not what this test is about).
        expected = ("Tally is up at", " ready.", "beat: Starting")
        while not all(text in log_path.read_text() for text in expected):
            assert up.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.3)
        # The banner is printed once the server answers, not before.
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
        # Issue 26, item 10: the banner comes last, after the children's start-up lines, and
        # again on Enter; the development server's notices are not shown.
        output = log_path.read_text()
        assert output.rindex("Tally is up at") > max(
            output.index(" ready."), output.index("beat: Starting")
        ), output
        up.stdin.write(b"\n")
        up.stdin.flush()
        while log_path.read_text().count("Tally is up at") < 2:
            assert up.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.2)
        for notice in ("This is a development server", "Performing system checks", "GET /healthz"):
            assert notice not in log_path.read_text(), notice
        children = _children(up.pid)
        assert len(children) == 3, children
        pids = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(up.pid)], capture_output=True, text=True
        ).stdout.split()
        up.send_signal(signum)
        assert up.wait(timeout=40) == 0
        for pid in pids:  # every child gone, not only detached from its parent
            assert (
                not Path(f"/proc/{pid}").exists()
                or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
            )
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
        output = log_path.read_text()
        lines = [line for line in output.splitlines() if "|" in line[:8]]
        names = {line.split("|")[0].strip() for line in lines}
        assert names == {"web", "worker", "beat"}, output
        assert "No hostname was supplied" not in output
        # Celery's start-up banners (45 lines) no longer push the banner off the screen.
        assert "Configuration ->" not in output and "[queues]" not in output, output
    finally:
        if up.poll() is None:
            up.kill()


def test_routine_lines_are_hidden_and_the_rest_shown():
    from devtools.management.commands.tally_up import routine

    hidden = [
        ("web", "WARNING: This is a development server. Do not use it in a production setting."),
        ("web", "For more information on production servers see: https://docs.djangoproject.com"),
        ("web", "Performing system checks..."),
        ("web", '[26/Nov/2026 06:01:31] "GET /healthz HTTP/1.1" 200 101'),
        ("beat", "2026-11-26 INFO celery.beat Scheduler: Sending due task retrain-sweep (x)"),
        ("worker", "INFO celery.worker.strategy Task learning.retrain_sweep[6264-15] received"),
        ("worker", "INFO celery.app.trace Task learning.retrain_sweep[6264-15] succeeded in "
                   "0.32s: {'queued': [], 'redelivered': []}"),
    ]  # fmt: skip
    shown = [
        ("web", '[26/Nov/2026 06:01:31] "GET /healthz HTTP/1.1" 503 90'),
        ("web", '[26/Nov/2026 06:01:31] "POST /api/observations/ HTTP/1.1" 201 300'),
        ("web", "Starting development server at http://127.0.0.1:8000/"),
        ("worker", "INFO celery.app.trace Task learning.retrain_sweep[6264-15] succeeded in "
                   "0.32s: {'queued': [3], 'redelivered': []}"),
        ("worker", "INFO celery.apps.worker celery@vm ready."),
        ("beat", "ERROR celery.beat Message Error: Couldn't apply scheduled task"),
    ]  # fmt: skip
    assert all(routine(name, line) for name, line in hidden)
    assert not any(routine(name, line) for name, line in shown)


def _stub_venv(tmp_path: Path, stamp: str | None) -> tuple[Path, Path]:
    """A venv whose python only logs how it was called (what `./tally up` installs and runs)."""
    venv, calls = tmp_path / "venv", tmp_path / "calls"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    (venv / "bin" / "python").chmod(0o755)
    if stamp is not None:
        digest = subprocess.run(
            ["sha256sum", "pyproject.toml"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()[0]
        (venv / ".tally-installed").write_text(f"{digest} {stamp}\n")
    return venv, calls


@pytest.mark.parametrize(
    ("stamp", "installs"),
    [(None, "-m pip install -q -e .[bench]"), ("[dev]", None), ("[bench]", None)],
)
def test_tally_up_installs_the_bench_extra_that_its_demo_needs(tmp_path, stamp, installs):
    """`./tally up` runs `manage.py tally_up`, whose command and demo are in devtools/, which the
    runtime install does not package: it installs the `[bench]` extra (it installed none). A venv
    that `./tally test` made, with `[dev]`, has it already and is not installed again."""
    venv, calls = _stub_venv(tmp_path, stamp)
    env = {**os.environ, "TALLY_VENV": str(venv)}
    done = subprocess.run(
        ["./tally", "up", "--no-demo"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    lines = calls.read_text().splitlines()
    assert lines[-1] == "manage.py tally_up --no-demo"
    assert (installs in lines) if installs else len(lines) == 1, lines
