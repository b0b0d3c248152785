"""One CSV policy for every CSV file the platform writes (issue 44.4): `learning.core.csvsafe`.

A spreadsheet runs a cell that starts like a formula; the observations CSV escaped such cells
and the cost matrix CSV did not. The policy is one writer, and this test holds the line: no
module writes CSV with `csv.writer` but through it."""

import re
from pathlib import Path

import pytest

from learning.core.csvsafe import SafeCsvWriter, safe_cell, text_cell

ROOT = Path(__file__).resolve().parent.parent
POLICY = ROOT / "learning" / "core" / "csvsafe.py"
PACKAGES = ("accounts", "annotation", "common", "config", "delivery", "devtools", "learning")


def test_every_csv_writer_goes_through_the_policy():
    writers = re.compile(r"csv\.(writer|DictWriter)\(|from csv import .*\b(writer|DictWriter)\b")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != POLICY
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if writers.search(line)
    ]
    assert found == [], "write CSV with learning.core.csvsafe.SafeCsvWriter"
    assert writers.search(POLICY.read_text(encoding="utf-8"))  # the check can see a writer


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ('=HYPERLINK("http://x.y","z")', '\'=HYPERLINK("http://x.y","z")'),
        ("+1+1", "'+1+1"),
        ("-2", "'-2"),
        ("@SUM(1)", "'@SUM(1)"),
        ("\tx", "'\tx"),
        ("NOUN;=1+1", "NOUN;'=1+1"),
        ('a; "@x', "a; \"'@x"),
        ("NOUN", "NOUN"),
        ("'=already", "'=already"),
        ("a-b", "a-b"),
    ],
)
def test_formula_like_cells_are_text_and_read_back_as_they_were(value, written):
    assert safe_cell(value) == written
    assert text_cell(written) == value or value.startswith("'")
    assert safe_cell(3) == 3 and safe_cell(None) is None


def test_the_writer_escapes_every_text_cell():
    import io

    out = io.StringIO()
    SafeCsvWriter(out, lineterminator="\n").writerow(["=1", 2, "x;+3"])
    assert out.getvalue() == "'=1,2,x;'+3\n"
