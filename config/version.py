"""The version of the running code, recorded with every model version."""

from __future__ import annotations

import subprocess
from functools import lru_cache
from importlib import metadata

from django.conf import settings


@lru_cache(maxsize=1)
def code_version() -> str:
    """The git commit of the running code if known, else the package version."""
    if settings.TALLY_CODE_VERSION:
        return settings.TALLY_CODE_VERSION[:64]
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    if sha:
        return sha
    try:
        return f"tally {metadata.version('tally')}"
    except metadata.PackageNotFoundError:
        return "unknown"
