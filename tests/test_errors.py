import json

import pytest
from django.test import RequestFactory

from config.errors import server_error


@pytest.mark.django_db
def test_unknown_api_address_gets_the_json_error_body(client):
    response = client.get("/api/no-such-thing/")
    assert response.status_code == 404
    assert response.json() == {
        "error": {"code": "not_found", "message": "There is no such API address."}
    }


@pytest.mark.django_db
def test_unknown_page_outside_the_api_stays_html(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


@pytest.mark.django_db
def test_server_error_under_the_api_is_json():
    response = server_error(RequestFactory().get("/api/projects/"))
    assert response.status_code == 500
    assert json.loads(response.content)["error"]["code"] == "server_error"
