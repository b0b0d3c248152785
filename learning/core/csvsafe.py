"""CSV that a spreadsheet shows as text: the one policy for every CSV file Tally writes.

A spreadsheet reads a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return as a formula (CSV injection: ``=HYPERLINK(…)`` in a tag name or a username runs when
the manager opens the file). :class:`SafeCsvWriter` writes every text cell with a leading ``'``
when it would start one (OWASP's advice), and so every part of it that a ``;``-separated
reading would make a cell (most of continental Europe: ``X;=2+2`` is written ``X;'=2+2``).
Numbers are written as they are. :func:`text_cell` undoes it, for the files Tally reads back
(a cost matrix downloaded, edited and uploaded again).

Every CSV writer of the platform goes through :class:`SafeCsvWriter`, so a value added
tomorrow (a tag name, a username, a filename) is escaped too; ``tests/test_csv_policy.py``
holds the line.
"""

from __future__ import annotations

import csv
import re

__all__ = ["FORMULA_STARTS", "SafeCsvWriter", "safe_cell", "text_cell"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Where a spreadsheet set to `;`-separated files starts a cell inside one of ours: after a `;`,
# past spaces and quotes.
_AFTER_SEMICOLON = re.compile(r"(;[\s\"]*)(?=[=+\-@\t\r])")
_ESCAPED_AFTER_SEMICOLON = re.compile(r"(;[\s\"]*)'(?=[=+\-@\t\r])")


def safe_cell(value):
    """``value`` as a spreadsheet shows it as text (a string), or as it is (anything else)."""
    if not isinstance(value, str):
        return value
    value = _AFTER_SEMICOLON.sub(r"\1'", value)
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def text_cell(cell: str) -> str:
    """The text :func:`safe_cell` made ``cell`` from (a cell it did not escape is returned as
    it is)."""
    if cell.startswith("'") and cell[1:].startswith(FORMULA_STARTS):
        cell = cell[1:]
    return _ESCAPED_AFTER_SEMICOLON.sub(r"\1", cell)


class SafeCsvWriter:
    """``csv.writer`` whose every text cell goes through :func:`safe_cell`."""

    def __init__(self, buffer, **options) -> None:
        self._writer = csv.writer(buffer, **options)

    cell = staticmethod(safe_cell)

    def writerow(self, row) -> None:
        self._writer.writerow([safe_cell(value) for value in row])
