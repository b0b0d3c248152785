"""The annotator page's first load as production serves it: static files collected with
whitenoise's compressed manifest storage and served by its middleware, the page gzipped."""

import pytest
from django.core.management import call_command
from django.test import Client

from tests.frontend.conftest import client_for

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 50 * 1024


@pytest.fixture
def production_static(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    settings.DEBUG = False
    call_command("collectstatic", interactive=False, verbosity=0)
    return settings.STATIC_ROOT


def test_annotator_first_load_is_small_when_compressed(production_static, project, annotator):
    client = client_for(annotator)
    page = client.get(f"/annotate/{project.pk}/", HTTP_ACCEPT_ENCODING="gzip, br")
    assert page.status_code == 200
    assert page["Content-Encoding"] == "gzip"
    total = len(page.content)
    # The asset URLs (hashed names), from the uncompressed page.
    plain = client_for(annotator).get(f"/annotate/{project.pk}/").content.decode()
    assets = [
        part.split('"')[0]
        for part in plain.split('="/static/')[1:]
        if part.split('"')[0].endswith((".css", ".js"))
    ]
    assert len(assets) == 2, assets
    static = Client()
    for asset in assets:
        response = static.get(f"/static/{asset}", HTTP_ACCEPT_ENCODING="gzip, br")
        assert response.status_code == 200, asset
        assert response["Content-Encoding"] in {"gzip", "br"}, asset
        body = b"".join(response.streaming_content)
        total += len(body)
    # The task and the stats (JSON, about 1 KB) come on top: well within the 50 KB budget.
    assert total <= LIMIT // 2, total
    print(f"annotator page, production static files: {total} bytes compressed")
