"""The API's error bodies say what is wrong in words: nested validation errors too."""

import pytest

from tests.support.factories import client_for

pytestmark = pytest.mark.django_db


def test_a_nested_error_is_plain_words_never_an_error_detail_repr(manager):
    """Issue 44.5: a list item's error was shown as `{'name': [ErrorDetail(string=…)]}`."""
    body = {"name": "x", "tags": [{"name": "NOUN"}, {"guideline": "g"}, {"name": ""}]}
    response = client_for(manager).post("/api/projects/", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["tags"] == [
        "Item 2, name: This field is required.",
        "Item 3, name: This field may not be blank.",
    ]
    assert "ErrorDetail" not in response.content.decode()
