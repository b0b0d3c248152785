"""The Content-Security-Policy header (issue 24, item 10): on every page, strict for scripts,
and no template holds what it would block (the pages run under it: test_csp_browser.py)."""

import re
from pathlib import Path

import pytest
from django.conf import settings

from tests.support.factories import client_for

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url", ["/", "/login/", "/signup/", "/join/abc", "/admin/login/", "/x/"])
def test_every_page_carries_the_policy(url):
    response = client_for(None).get(url)
    policy = response["Content-Security-Policy"]
    directives = dict(d.split(" ", 1) for d in policy.split("; "))
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'"


def test_the_api_docs_allow_only_their_inline_stylesheet(manager):
    response = client_for(manager).get("/api/docs/")
    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    assert "style-src 'self' 'unsafe-inline'" in policy and "script-src 'self';" in policy
    html = response.content.decode()
    assert not re.search(r"<script>(?!</script>)", html)  # the start-up script is a file
    script = client_for(manager).get("/api/docs/?script=")
    assert script.status_code == 200 and "SwaggerUIBundle" in script.content.decode()


def test_no_template_holds_inline_script_style_or_handlers():
    templates = Path(settings.BASE_DIR, "frontend", "templates").rglob("*.html")
    for path in templates:
        html = path.read_text(encoding="utf-8")
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), path
        assert not re.search(r"<style\b|\sstyle=|\son[a-z]+=|javascript:", html), path


def test_django_debug_pages_keep_their_inline_styles_in_development(settings):
    settings.DEBUG = True
    response = client_for(None).get("/nowhere-at-all/")
    assert response.status_code == 404
    assert "Content-Security-Policy" not in response
    assert "Content-Security-Policy" in client_for(None).get("/login/")
