"""The manager dashboard on a 360 px phone, in a real Chromium (issue 17, "Dashboard on a
phone"): the annotators table fits, confusion-matrix numbers stay inside their cells, tables too
wide for the screen say so, and the learning curve spreads its points over the plot.

The project is an EWT slice (CC BY-SA 4.0, see data/README.md) answered by four exact annotators,
one with a long name, and a careless one who ends up flagged, retrained twice.
"""

import pytest

from tests.factories import UserFactory
from tests.frontend.conftest import PHONE
from tests.frontend.test_dashboard_browser import ewt_slice
from tests.frontend.test_screenshots import crowd_project

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_NAME = "annotator_with_a_rather_long_name"


@pytest.fixture(autouse=True)
def _short_event_streams(settings):
    settings.TALLY_SSE_STREAM_SECONDS = 4
    settings.TALLY_SSE_POLL_SECONDS = 1


@pytest.fixture
def dashboard(new_context, tmp_path, manager):
    """The dashboard of a project with two model versions, open on a phone."""
    corpus = ewt_slice(tmp_path / "ewt.conllu", 300)
    crowd = [UserFactory(username=name) for name in ("ana", "bo", "chen", LONG_NAME)]
    project = crowd_project(manager, corpus, name="EWT on a phone", crowd=crowd, rounds=(40, 40))
    page = new_context(manager, **PHONE).new_page()
    page.goto(f"/projects/{project.pk}/")
    page.wait_for_selector("#curve svg")
    page.wait_for_selector("#annotators table")
    page.wait_for_selector("#confusion table")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    return page


def test_annotators_table_fits_a_phone(dashboard):
    page = dashboard
    wrap = "document.getElementById('annotators')"
    assert page.evaluate(f"{wrap}.scrollWidth <= {wrap}.clientWidth")
    for header in ("Answers", "Reliability"):
        box = page.locator("#annotators th", has_text=header).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 360, header
    assert LONG_NAME in page.inner_text("#annotators")
    flag = page.locator("#annotators .pill-flag")
    assert flag.is_visible()
    box = flag.bounding_box()
    assert box["x"] + box["width"] <= 360


def test_confusion_matrix_numbers_stay_inside_their_cells(dashboard):
    page = dashboard
    cells = page.evaluate(
        """() => [...document.querySelectorAll('#confusion td')].filter((td) => td.textContent)
          .map((td) => {
            const range = document.createRange();
            range.selectNodeContents(td);
            const text = range.getBoundingClientRect(), cell = td.getBoundingClientRect();
            return [td.textContent, text.left - cell.left, cell.right - text.right];
          })"""
    )
    assert any(len(text) >= 3 for text, _, _ in cells)  # three-digit counts are there
    for text, left, right in cells:
        assert left >= 3 and right >= 3, (text, left, right)


def test_tables_wider_than_the_phone_say_they_scroll(dashboard):
    page = dashboard
    wide = page.evaluate(
        "[...document.querySelectorAll('.table-wrap')]"
        ".filter((w) => w.scrollWidth > w.clientWidth + 1).map((w) => w.id || w.className)"
    )
    assert wide  # the confusion matrix cannot fit 17 columns into 360 px
    hints = page.evaluate(
        """() => [...document.querySelectorAll('.table-wrap')]
          .filter((w) => w.scrollWidth > w.clientWidth + 1)
          .map((w) => [w.id || w.className, w.classList.contains('more-right'),
                       getComputedStyle(w).maskImage || getComputedStyle(w).webkitMaskImage])"""
    )
    for name, more, mask in hints:
        assert more and mask not in ("", "none"), name
    # Scrolled to the end, the hint goes.
    page.evaluate("const c = document.getElementById('confusion'); c.scrollLeft = c.scrollWidth")
    page.wait_for_function(
        "() => !document.getElementById('confusion').classList.contains('more-right')"
    )
    assert page.evaluate("document.getElementById('confusion').classList.contains('more-left')")


def test_learning_curve_spreads_its_points(dashboard):
    page = dashboard
    plot = page.evaluate(
        """() => {
          const svg = document.querySelector('#curve svg');
          const axis = [...svg.querySelectorAll('line.axis')]
            .find((l) => l.getAttribute('y1') === l.getAttribute('y2'));
          const xs = [...svg.querySelectorAll('circle.dot')]
            .map((c) => Number(c.getAttribute('cx')));
          const labels = [...svg.querySelectorAll('text.x-tick')].map((t) => t.getBBox())
            .map((b) => [b.x, b.x + b.width]);
          return {left: Number(axis.getAttribute('x1')), right: Number(axis.getAttribute('x2')),
                  width: svg.viewBox.baseVal.width, xs, labels};
        }"""
    )
    width = plot["right"] - plot["left"]
    xs = sorted(plot["xs"])
    assert len(xs) == 2
    # Not crowded at the right edge: the first version near the left of the plot.
    assert xs[0] - plot["left"] <= 0.1 * width, plot
    assert xs[-1] - xs[0] >= 0.7 * width, plot
    # The x axis is labelled, inside the chart, without overlapping labels.
    labels = sorted(plot["labels"])
    assert len(labels) >= 2
    assert labels[0][0] >= 0 and labels[-1][1] <= plot["width"]
    assert all(a[1] < b[0] for a, b in zip(labels, labels[1:], strict=False))
