"""The docs say what runs (issue 46 §14, issue 43 §4).

The README's generated-client command failed as written (the generator was a test dependency
only, and it pointed at port 8000 of a server the reader may not run). Here the README's shell
commands run as written from a checkout-like directory (a server started for those that need
one), every `manage.py` command the README and docs/ show is parsed by its command's own parser
(so a renamed flag fails here, not in a reader's terminal), every relative link resolves, every
figure the README keeps links to the benchmark that measures it, and every variable the settings
read is in docs/configuration.md.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import get_commands, load_command_class

from tests.conftest import REQUIRE_SERVICES
from tests.support.processes import child_env
from tests.support.servers import ROOT, free_port, serving

pytestmark = pytest.mark.django_db(databases=[])  # reads files and settings only

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))  # the user docs; decisions/ record history
EWT = ROOT / "data" / "ud-english-ewt"
# The address the README gives for a running `./tally up`.
SERVER = "http://127.0.0.1:8000"
# Not run here: the two commands themselves (this test runs inside `./tally test`), and the
# production stack's (Docker). Long commands (benchmarks, simulations) are parsed, not run.
NOT_RUN = ("./tally ", "cp .env.example", "docker ")
LONG = re.compile(r"manage\.py (benchmark_\w+|simulate_\w+|learning_curves)\b")


def test_the_readme_server_is_where_tally_up_serves():
    """The README's commands that need a running platform name `./tally up`'s address (a
    reader ran the generator against port 8000 while the platform served on another)."""
    commands = get_commands()
    up = load_command_class(commands["tally_up"], "tally_up")
    options = up.create_parser("manage.py", "tally_up").parse_args([])
    assert f"http://{options.host}:{options.port}" == SERVER
    text = README.read_text()
    assert SERVER in text
    assert not set(re.findall(r"http://(?:127\.0\.0\.1|localhost):\d+", text)) - {SERVER}


def _shell_blocks(path: Path) -> list[str]:
    return re.findall(r"^```(?:sh|bash|shell)\n(.*?)^```", path.read_text(), re.M | re.S)


def _commands(block: str) -> list[str]:
    """The block's commands: continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", block)
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append(shlex.join(words))
    return commands


def _checkout_like(tmp_path: Path) -> Path:
    """A directory that looks like a clone after the two commands: every top-level entry of
    the checkout linked, and `.venv` the environment these tests run in. What the commands
    write (a schema, a client) lands here, not in the checkout."""
    work = tmp_path / "clone"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in {".venv", "var", ".git"}:
            (work / entry.name).symlink_to(entry)
    (work / ".venv").symlink_to(Path(sys.prefix))
    return work


@pytest.mark.slow
def test_the_readme_commands_run_as_written(tmp_path):
    commands = [c for block in _shell_blocks(README) for c in _commands(block)]
    quick = [c for c in commands if not c.startswith(NOT_RUN) and not LONG.search(c)]
    assert any("openapi-python-client" in c for c in quick), quick
    assert any(SERVER in c for c in quick), quick
    if not (Path(sys.prefix) / "bin" / "openapi-python-client").exists():
        message = "needs the [dev] extra (openapi-python-client): pip install -e '.[dev]'"
        if REQUIRE_SERVICES:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    work = _checkout_like(tmp_path)
    port = free_port()
    env = child_env(
        TALLY_DATA_DIR=str(tmp_path / "data"),
        TALLY_BIND=f"127.0.0.1:{port}",
        WEB_WORKERS="1",
        WEB_THREADS="2",
        TALLY_LOG_LEVEL="WARNING",
    )
    url = f"http://127.0.0.1:{port}"
    with serving([sys.executable, "-m", "gunicorn", "config.wsgi"], env, url, tmp_path / "web.log"):
        for command in quick:
            done = subprocess.run(
                ["bash", "-c", command.replace(SERVER, url)],
                cwd=work, env=env, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-3000:])
    assert (work / "tally_client" / "tally_client" / "client.py").exists() or (
        work / "tally_client" / "client.py"
    ).exists()


STUB = """#!/bin/sh
printf '%s\\0' "$@" >> "$STUB_LOG"
printf '\\n' >> "$STUB_LOG"
"""


def _manage_invocations(tmp_path: Path, path: Path) -> list[list[str]]:
    """The `manage.py` argument lists `path`'s shell blocks run, shell variables expanded: each
    block's assignments and Python commands run by bash with `python` a stub that records its
    arguments. Nothing else of the block runs."""
    stub, log = tmp_path / "python-stub", tmp_path / f"{path.stem}.log"
    stub.write_text(STUB)
    stub.chmod(0o755)
    log.write_text("")
    kept = re.compile(r"^(\w+=|(\.venv/bin/)?python (manage\.py|\$\w+))")
    for block in _shell_blocks(path):
        lines = [c for c in _commands(block) if kept.match(c)]
        script = "\n".join(re.sub(r"^(\.venv/bin/)?python ", '"$STUB" ', c) for c in lines)
        subprocess.run(
            ["bash", "-ec", script],
            cwd=ROOT, env={"STUB": str(stub), "STUB_LOG": str(log), "PATH": "/usr/bin:/bin"},
            check=True,
        )  # fmt: skip
    calls = [record.split("\0") for record in log.read_text().split("\0\n") if record]
    return [call[1:] for call in calls if call and call[0] == "manage.py"]


def test_every_manage_command_the_docs_show_parses(tmp_path):
    placeholders = {
        "TRAIN": str(EWT / "en_ewt-ud-train.conllu.gz"),
        "TEST": str(EWT / "en_ewt-ud-test.conllu.gz"),
    }
    commands = get_commands()
    seen = 0
    for path in [README, *DOCS]:
        for name, *arguments in _manage_invocations(tmp_path, path):
            assert name in commands, f"{path.name}: manage.py {name} is no command"
            command = load_command_class(commands[name], name)
            parser = command.create_parser("manage.py", name)
            arguments = [placeholders.get(a, a) for a in arguments]
            try:
                parser.parse_args(arguments)
            except Exception as exc:  # CommandError: the parser's own message
                pytest.fail(f"{path.name}: manage.py {name} {shlex.join(arguments)}: {exc}")
            seen += 1
    assert seen >= 20, seen


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


def test_every_relative_link_of_the_docs_resolves():
    pages = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            resolved = (page.parent / file).resolve() if file else page
            if not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


def test_every_figure_the_readme_keeps_links_to_its_benchmark():
    text = re.sub(r"^```.*?^```", "", README.read_text(), flags=re.M | re.S)
    for paragraph in text.split("\n\n"):
        if re.search(r"\d( %| ×)", paragraph):
            assert "docs/benchmarks.md" in paragraph, paragraph


def test_every_variable_the_settings_read_is_documented():
    read = set()
    for source in (ROOT / "config" / "settings.py", ROOT / "gunicorn.conf.py"):
        read |= set(re.findall(r"env_\w+\(\s*\"([A-Z][A-Z0-9_]+)\"", source.read_text()))
    assert len(read) >= 40, read
    documented = (ROOT / "docs" / "configuration.md").read_text()
    assert not sorted(v for v in read if f"`{v}`" not in documented)


def test_the_readme_stays_a_map():
    assert len(README.read_text().splitlines()) <= 250
