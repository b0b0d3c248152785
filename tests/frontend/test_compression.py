"""The annotator page's first load as production serves it: static files collected with the
production storage (whitenoise's compressed manifest storage, module imports hashed too) and
served by whitenoise's middleware, the page gzipped."""

import posixpath
import re

import pytest
from django.core.management import call_command
from django.test import Client

from tests.frontend.conftest import session_client_for

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 50 * 1024


@pytest.fixture
def production_static(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "frontend.storage.StaticFilesStorage"},  # as in production
    }
    settings.DEBUG = False
    call_command("collectstatic", interactive=False, verbosity=0)
    return settings.STATIC_ROOT


ASSET = re.compile(r'(?:href|src)="/static/([^"]+\.(?:css|js))"')
IMPORT = re.compile(r"""\bfrom\s*["'](\.{1,2}/[^"']+)["']""")


def test_annotator_first_load_is_small_when_compressed(production_static, project, annotator):
    client = session_client_for(annotator)
    page = client.get(f"/annotate/{project.pk}/", HTTP_ACCEPT_ENCODING="gzip, br")
    assert page.status_code == 200
    assert page["Content-Encoding"] == "gzip"
    total = len(page.content)
    # The asset URLs (hashed names), from the uncompressed page: the stylesheet, the page's
    # module and, preloaded, every module it imports.
    plain = session_client_for(annotator).get(f"/annotate/{project.pk}/").content.decode()
    assets = ASSET.findall(plain)
    assert len(assets) == len(set(assets)), assets
    assert sum(a.endswith(".css") for a in assets) == 1, assets
    static = Client()
    for asset in assets:
        response = static.get(f"/static/{asset}", HTTP_ACCEPT_ENCODING="gzip, br")
        assert response.status_code == 200, asset
        assert response["Content-Encoding"] in {"gzip", "br"}, asset
        body = b"".join(response.streaming_content)
        total += len(body)
        if asset.endswith(".js"):
            # Its imports are hashed names (cached for good, never mixed across deploys), all
            # among the page's preloads: no request waits for the module naming it.
            source = (production_static / asset).read_text(encoding="utf-8")
            for imported in IMPORT.findall(source):
                path = posixpath.normpath(posixpath.join(posixpath.dirname(asset), imported))
                assert path in assets, (asset, imported)
    # The task and the stats (JSON, about 1 KB) come on top: well within the 50 KB budget.
    assert total <= LIMIT // 2, total
    print(f"annotator page, production static files: {total} bytes compressed, {len(assets)} files")
