"""Structured (one JSON object per line) log records for production."""

import json
import logging
from datetime import UTC, datetime

_STANDARD = set(vars(logging.makeLogRecord({})))


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        # Anything passed with extra={...} becomes a field of its own.
        entry.update({key: value for key, value in vars(record).items() if key not in _STANDARD})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class DropMessages(logging.Filter):
    """Drop the records whose message starts with one of `prefixes`: what means nothing here
    (kombu's "No hostname was supplied" on the embedded broker, which has no host)."""

    def __init__(self, prefixes: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.prefixes = tuple(prefixes)

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefixes)
