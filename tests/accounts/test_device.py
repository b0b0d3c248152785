"""The signed-in cookie the annotator page reads offline, and the sign-out that clears the
device (accounts/device.py, frontend TallyLogoutView; docs/decisions/045-shared-phone.md)."""

from django.test import Client

from accounts.device import COOKIE, session_tag
from tests.frontend.conftest import PASSWORD


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_signed_in_page_sets_the_cookie_with_the_user_and_session_tag(manager):
    client = _signed_in(manager)
    response = client.get("/")
    cookie = response.cookies[COOKIE]
    assert cookie.value == f"{manager.pk}.{session_tag(client.session.session_key)}"
    assert not cookie["httponly"]
    assert session_tag(client.session.session_key) not in client.session.session_key
    # Sent again unchanged, it is not set again.
    assert COOKIE not in client.get("/").cookies


def test_signing_out_clears_the_site_data_and_the_cookie(manager):
    client = _signed_in(manager)
    client.get("/")
    response = client.post("/logout/")
    assert response.status_code == 302
    assert response["Clear-Site-Data"] == '"cache", "storage"'
    assert response.cookies[COOKIE].value == ""  # deleted
    assert client.get("/").status_code == 302  # signed out


def test_a_sign_out_that_kept_unsent_answers_clears_the_cache_only(manager):
    client = _signed_in(manager)
    response = client.post("/logout/", {"outbox": "kept"})
    assert response["Clear-Site-Data"] == '"cache"'


def test_a_stale_cookie_of_another_session_is_replaced_and_removed_when_signed_out(manager):
    client = Client()
    client.cookies[COOKIE] = "999.deadbeef"
    assert client.get("/login/").cookies[COOKIE].value == ""
    manager.set_password(PASSWORD)
    manager.save()
    response = client.post("/login/", {"username": manager.username, "password": PASSWORD})
    assert response.status_code == 302
    assert response.cookies[COOKIE].value.startswith(f"{manager.pk}.")
