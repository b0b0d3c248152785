"""The cost-of-errors panel on the manager dashboard, in a real Chromium (issue 28): the grid
of the project's cost matrix, a bad cell refused in words naming it, a matrix saved, a preset,
and the report re-scored in the new currency, its summary following without a reload."""

import numpy as np
import pytest

from learning import costs
from learning.core.cost import cost_matrix_preset
from learning.models import CostReport, ModelVersion
from tests.frontend.conftest import DESKTOP
from tests.support.crowd import add_annotators, toy_project
from tests.support.learning import trained

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TAGS = ["NOUN", "VERB", "DET", "ADJ"]


@pytest.fixture
def toy_trained(manager):
    """A project of the toy language after 80 exact answers by three annotators and a retrain."""
    project = toy_project(manager)
    return trained(project, add_annotators(project, 3))


def wait_for_summary(page, version, *, revision):
    """The cost summary says the figures of the version's report of that matrix revision."""
    report = CostReport.objects.get(version=version)
    assert report.revision == revision
    said = (f"{report.cost_per_token:.3f} per word on the evaluation sentences (it expects "
            f"{report.expected_cost_per_token:.3f})")  # fmt: skip
    page.wait_for_function(
        "(said) => document.getElementById('cost-report').textContent.includes(said)",
        arg=said,
        timeout=10_000,
    )


def cell(page, i, j):
    return page.locator(f'#cost-grid input[data-cell="{i},{j}"]')


def test_manager_edits_the_cost_matrix_and_the_report_is_rescored(
    new_context, manager, toy_trained, eager
):
    page = new_context(manager, **DESKTOP).new_page()
    page.goto(f"/projects/{toy_trained.pk}/")
    page.wait_for_selector("#cost-grid table.cost-grid")
    assert page.locator("#cost-grid tbody tr").count() == 4
    assert page.locator("#cost-grid input").count() == 16
    assert cell(page, 1, 1).is_disabled() and cell(page, 0, 1).input_value() == "1"
    # Readable on a laptop: the whole grid is on screen, nothing scrolled out.
    assert page.evaluate("(() => { const w = document.getElementById('cost-grid');"
                         " return w.scrollWidth <= w.clientWidth; })()")  # fmt: skip
    page.wait_for_function(
        "() => /per word/.test(document.getElementById('cost-report').textContent)"
    )
    assert "Model v1" in page.inner_text("#cost-report")

    # A negative cost is refused on the page, naming the cell.
    cell(page, 1, 2).fill("-1")
    page.click("#cost-form button[type=submit]")
    page.wait_for_selector("#cost-error:not([hidden])")
    assert "Cell (true VERB, given DET) is negative" in page.inner_text("#cost-error")
    assert cell(page, 1, 2).get_attribute("aria-invalid") == "true"
    assert not costs.CostMatrix.objects.filter(project=toy_trained).exists()
    # So is one in an uploaded CSV file, by the server, in plain numbers (it said
    # "np.float64(-1.0)").
    bad = "t,NOUN,VERB,DET,ADJ\nNOUN,0,1,1,1\nVERB,1,0,-1,1\nDET,1,1,0,1\nADJ,1,1,1,0\n"
    page.set_input_files(
        "#cost-file", files=[{"name": "mine.csv", "mimeType": "text/csv", "buffer": bad.encode()}]
    )
    page.wait_for_function(
        "() => /predicted DET\\) is negative: -1\\./.test(document.getElementById('cost-error')"
        ".textContent)"
    )
    assert "np." not in page.inner_text("#cost-error")
    assert not costs.CostMatrix.objects.filter(project=toy_trained).exists()

    # Fixed and saved: stored in the project's order, every version re-scored at once.
    cell(page, 1, 2).fill("3")
    cell(page, 0, 3).fill("0.25")
    page.click("#cost-form button[type=submit]")
    page.wait_for_function("() => document.getElementById('cost-error').hidden")
    page.wait_for_function("() => /own/.test(document.getElementById('cost-state').textContent)")
    saved = costs.cost_matrix_get(project_id=toy_trained.pk)
    expected = 1 - np.eye(4)
    expected[1, 2], expected[0, 3] = 3, 0.25
    np.testing.assert_allclose(saved.matrix, expected)
    assert saved.revision == 1
    first = ModelVersion.objects.get(project=toy_trained, number=1)
    assert CostReport.objects.get(version=first).revision == 1
    # The summary follows the re-scoring without a reload (issue 46.12: it stayed stale).
    wait_for_summary(page, first, revision=1)

    # A preset, then the page reloaded: the grid shows it.
    page.select_option("#cost-preset", "ordinal")
    page.click("#cost-apply")
    page.wait_for_function(
        "() => /ordinal/.test(document.getElementById('cost-state').textContent)"
    )
    wait_for_summary(page, first, revision=2)
    page.reload()
    page.wait_for_selector("#cost-grid table.cost-grid")
    ordinal = cost_matrix_preset("ordinal", TAGS)
    assert float(cell(page, 0, 1).input_value()) == pytest.approx(ordinal[0, 1])
    assert page.locator("#cost-csv").get_attribute("href").endswith("/cost-matrix/csv")
