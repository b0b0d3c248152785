"""Run a few processes together in the foreground, as `./tally up` does, and stop them together.

- Each child's output (stdout and stderr) is copied line by line to ours, prefixed with the
  child's name (`web    | ...`), so interleaved logs say where they come from; a line that
  `hide(name, line)` calls routine is left out.
- Each child runs in a session of its own, so a Ctrl-C in the terminal reaches this process only,
  and it stops the children in order; SIGTERM (what `kill PID` and process managers send) does
  the same. Stopping sends SIGTERM to each child (Celery stops its own pool), waits, then
  SIGKILLs whatever is left of each child's process group. The supervisor stops them all when
  one exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

STOP_TIMEOUT = 15.0


class Stopped(Exception):  # noqa: N818 (a signal, not an error)
    """SIGTERM or SIGINT arrived: stop everything."""


def _raise_stopped(signum, frame):
    raise Stopped(signal.Signals(signum).name)


class Supervisor:
    def __init__(
        self,
        commands: Mapping[str, Sequence[str]],
        *,
        cwd: Path | str,
        out: TextIO,
        hide: Callable[[str, str], bool] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.commands = commands
        self.cwd = cwd
        self.out = out
        self.hide = hide or (lambda name, line: False)
        self.extra_env = dict(env or {})
        self.last_output = time.monotonic()
        self.processes: dict[str, subprocess.Popen] = {}
        self._lock = threading.Lock()
        self._readers: list[threading.Thread] = []
        self._width = max(len(name) for name in commands)
        self._previous: dict[int, object] = {}

    def say(self, line: str) -> None:
        with self._lock:
            self.out.write(line if line.endswith("\n") else line + "\n")
            self.out.flush()
            self.last_output = time.monotonic()

    def __enter__(self) -> Supervisor:
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._previous[signum] = signal.signal(signum, _raise_stopped)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.extra_env}
        try:
            for name, command in self.commands.items():
                process = subprocess.Popen(
                    command, cwd=self.cwd, env=env, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, start_new_session=True,
                )  # fmt: skip
                self.processes[name] = process
                reader = threading.Thread(target=self._copy, args=(name, process), daemon=True)
                reader.start()
                self._readers.append(reader)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _copy(self, name: str, process: subprocess.Popen) -> None:
        prefix = f"{name:<{self._width}} | "
        for raw in process.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not self.hide(name, line):
                self.say(prefix + line)

    def dead(self) -> list[str]:
        return [name for name, process in self.processes.items() if process.poll() is not None]

    def wait_healthy(self, url: str, *, timeout: float) -> bool:
        """Whether `url` answered 200 within `timeout` seconds (False at once if a child died)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.dead():
            try:
                with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (ours)
                    if response.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.3)
        return False

    def wait_quiet(self, *, quiet: float, timeout: float) -> None:
        """Until nothing was printed for `quiet` seconds (the children's start-up said its
        say), or `timeout` seconds passed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.dead():
            if time.monotonic() - self.last_output >= quiet:
                return
            time.sleep(0.1)

    def run(self) -> list[str]:
        """Until a child exits (the names of those that did) or a signal stops us."""
        while not self.dead():
            time.sleep(0.3)
        return self.dead()

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type in (Stopped, KeyboardInterrupt):
            self.say("stopping…")
        # A second signal while stopping must not cut the stop short.
        for signum in self._previous:
            signal.signal(signum, signal.SIG_IGN)
        try:
            self.stop()
        finally:
            for signum, handler in self._previous.items():
                signal.signal(signum, handler)
        return exc_type in (Stopped, KeyboardInterrupt)

    def stop(self) -> None:
        for process in self.processes.values():
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for process in self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
        for process in self.processes.values():
            _signal_group(process, signal.SIGKILL)  # what is left, grandchildren included
            process.wait()
        for reader in self._readers:
            reader.join(timeout=2)


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)  # the child leads its own session and group
