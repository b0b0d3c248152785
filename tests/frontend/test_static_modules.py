"""The pages' ES modules on the server side: `{% module_script %}` preloads every module a page
imports, and production's storage blanks comment lines without touching code."""

import re
from pathlib import Path

import pytest

from frontend.storage import blank_comment_lines
from frontend.templatetags.modules import module_graph, module_script
from tests.frontend.conftest import session_client_for

JS = Path(__file__).resolve().parents[2] / "frontend" / "static" / "frontend" / "js"


# Loaded by a dynamic import() when the first task of its kind (or the first private task)
# arrives, or by a page in that language: not preloaded, so a count-only English page stays
# within its weight budget.
LAZY = {
    "frontend/js/annotate/kinds/verify.js",
    "frontend/js/annotate/privacy.js",
    "frontend/js/annotate/text-fr.js",
}


def test_module_graph_is_every_module_imported_directly_or_not():
    graph = module_graph("frontend/js/annotate/main.js")
    on_disk = {
        f"frontend/js/{p.relative_to(JS).as_posix()}" for p in (JS / "annotate").rglob("*.js")
    }
    assert on_disk >= LAZY and LAZY.isdisjoint(graph)
    assert set(graph) == (on_disk - {"frontend/js/annotate/main.js"} - LAZY) | {
        "frontend/js/lib/http.js",
        "frontend/js/lib/dom.js",
        "frontend/js/lib/device.js",
    }
    assert len(graph) == len(set(graph))
    dashboard = module_graph("frontend/js/dashboard/main.js")
    assert "frontend/js/dashboard/curve.js" in dashboard
    assert "frontend/js/lib/overflow.js" in dashboard
    assert not any(path.startswith("frontend/js/annotate/") for path in dashboard)


def test_module_script_preloads_then_runs_the_entry():
    html = module_script("frontend/js/join.js")
    assert html.endswith('<script type="module" src="/static/frontend/js/join.js"></script>')
    assert '<link rel="modulepreload" href="/static/frontend/js/lib/http.js">' in html


@pytest.mark.django_db
def test_annotator_page_preloads_its_modules(project, annotator):
    html = session_client_for(annotator).get(f"/annotate/{project.pk}/").content.decode()
    preloaded = re.findall(r'<link rel="modulepreload" href="/static/([^"]+)">', html)
    assert set(preloaded) == set(module_graph("frontend/js/annotate/main.js"))
    assert 'src="/static/frontend/js/annotate/main.js"' in html


def test_blank_comment_lines_keeps_code_and_line_numbers():
    source = "\n".join(
        [
            "// A module.",
            'import { a } from "./a.js";',
            "  // indented comment",
            'const url = "http://example.org/"; // kept: not a whole line',
            "const text = `first",
            "// inside a template literal: kept",
            "last`;",
            "/* block comments are kept */",
            "// after the literal: blanked",
        ]
    )
    out = blank_comment_lines(source).split("\n")
    assert len(out) == 9
    assert out[0] == out[2] == out[8] == ""
    assert out[1] == 'import { a } from "./a.js";'
    assert out[3].endswith("// kept: not a whole line")
    assert out[5] == "// inside a template literal: kept"
    assert out[7] == "/* block comments are kept */"


def test_every_module_keeps_its_code_when_comment_lines_are_blanked():
    for path in JS.rglob("*.js"):
        source = path.read_text(encoding="utf-8")
        blanked = blank_comment_lines(source)
        code = [line for line in source.split("\n") if not line.lstrip().startswith("//")]
        assert [line for line in blanked.split("\n") if line] == [line for line in code if line]
