"""What Tally accepts from a request, in one place: every string and number a client sends.

- No string may hold a NUL character (PostgreSQL cannot store one) or a lone surrogate
  (`"\\ud800"` in JSON: not a character at all, it cannot be written as UTF-8). Refused wherever
  the request is read — the request line and headers (`common.middleware.RefuseUnreadable`), JSON
  and form bodies (`common.api.parsers`, and `load_json` for the hot views) — so no view,
  serializer or service ever sees one, and each refusal is the same 400 `parse_error` that says
  where the character was.
- JSON numbers are finite: `NaN`, `Infinity`, `-Infinity` (which Python's decoder accepts) and
  numbers beyond a double's range (`1e999`, read as infinity) are refused.
- A JSON body is at most `DATA_UPLOAD_MAX_MEMORY_SIZE` bytes (413 beyond).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from django.conf import settings

# NUL, and the surrogate code points (a valid pair in JSON is decoded to one character, so any
# surrogate left in a decoded string is a lone one).
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class UnreadableInput(ValueError):
    """The request holds something Tally does not accept (`str(exc)` says what and where)."""


class TooLarge(ValueError):
    """The body is larger than a JSON body may be."""


def describe(char: str) -> str:
    return "a NUL character" if char == "\x00" else f"a lone surrogate (\\u{ord(char):04x})"


def check_text(value: str, where: str) -> None:
    found = UNSTORABLE.search(value)
    if found:
        raise UnreadableInput(f"{where} contains {describe(found.group())}, which is not text.")


def check_strings(data: Any, where: str = "The body") -> None:
    """Refuse a NUL or a lone surrogate in any string (keys too) of decoded JSON `data`."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            check_text(item, where)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _no_constant(name: str):
    raise UnreadableInput(f"JSON parse error - {name} is not a number Tally accepts.")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise UnreadableInput(f"JSON parse error - the number {text[:40]} is too large.")
    return value


def load_json(raw: bytes | str) -> Any:
    """Decode a JSON body under the rules above; `UnreadableInput` (400) or `TooLarge` (413)."""
    if len(raw) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        raise TooLarge(f"A JSON body is at most {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes.")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError as exc:
        raise UnreadableInput("JSON parse error - nested too deeply") from exc
    except UnreadableInput:
        raise
    except ValueError as exc:  # malformed JSON, or not UTF-8
        raise UnreadableInput(f"JSON parse error - {exc}") from exc
    check_strings(data)
    return data
