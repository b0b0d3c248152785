"""API tokens per device, expiring; sign-out that revokes; password change and reset (issue 44,
item 7: one token per user that never expired, that site sign-out did not revoke and API
logout that did not end browser sessions, and no password change or reset outside the admin)."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.utils import timezone

from accounts.models import ApiToken
from tests.support.factories import client_for

PASSWORD = "correct horse 42"
NEW_PASSWORD = "battery staple 17"
pytestmark = pytest.mark.django_db


@pytest.fixture
def ann(db):
    return get_user_model().objects.create_user("ann", password=PASSWORD, email="ann@example.org")


def _login(device="", password=PASSWORD, client=None):
    client = client or client_for(None)
    body = {"username": "ann", "password": password, **({"device": device} if device else {})}
    return client.post("/api/auth/login/", body, format="json")


def _as(key):
    client = client_for(None)
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def _browser():
    """A browser signed in on the site (a session, and the CSRF token its pages carry)."""
    browser = Client(enforce_csrf_checks=True)
    browser.get("/login/")
    response = browser.post(
        "/login/",
        {
            "username": "ann",
            "password": PASSWORD,
            "csrfmiddlewaretoken": browser.cookies["csrftoken"].value,
        },
    )
    assert response.status_code == 302, response.content
    return browser


def _csrf(browser) -> dict:
    return {"HTTP_X_CSRFTOKEN": browser.cookies["csrftoken"].value}


def test_each_device_has_its_token_listed_and_revoked_alone(ann):
    phone = _login(device="phone").json()
    laptop = _login(device="laptop script").json()
    assert phone["token"] != laptop["token"]
    assert timezone.now() + timedelta(days=29) < _parse(phone["expires_at"])
    listed = _as(phone["token"]).get("/api/auth/tokens/").json()["results"]
    assert [(t["name"], t["current"]) for t in listed] == [
        ("laptop script", False),
        ("phone", True),
    ]
    assert all(t["prefix"] in (phone["token"][:6], laptop["token"][:6]) for t in listed)
    assert phone["token"] not in str(listed) and laptop["token"] not in str(listed)
    revoked = _as(phone["token"]).delete(f"/api/auth/tokens/{listed[0]['id']}/")
    assert revoked.status_code == 204
    assert _as(laptop["token"]).get("/api/me/").status_code == 401
    assert _as(phone["token"]).get("/api/me/").status_code == 200
    # Another user's token cannot be named.
    other = get_user_model().objects.create_user("bob", password=PASSWORD)
    theirs = client_for(other).get("/api/auth/tokens/").json()["results"][0]["id"]
    assert _as(phone["token"]).delete(f"/api/auth/tokens/{theirs}/").status_code == 404


def _parse(text):
    from django.utils.dateparse import parse_datetime

    return parse_datetime(text)


def test_an_expired_token_signs_in_nowhere(ann, project_of_ann):
    key = _login().json()["token"]
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = _as(key).get("/api/me/")
    assert response.status_code == 401
    assert "expired" in response.json()["error"]["message"]
    # The annotator's cycle (one statement on PostgreSQL) refuses it too.
    assert _as(key).post(f"/api/projects/{project_of_ann.pk}/tasks/next/").status_code == 401


@pytest.fixture
def project_of_ann(ann):
    from annotation.models import Membership
    from tests.support.factories import make_project

    project = make_project()
    Membership.objects.create(project=project, user=ann, role=Membership.Role.ANNOTATOR)
    return project


def test_logging_out_revokes_that_token_only(ann):
    first, second = _login().json()["token"], _login().json()["token"]
    assert _as(first).post("/api/auth/logout/").status_code == 204
    assert _as(first).get("/api/me/").status_code == 401
    assert _as(second).get("/api/me/").status_code == 200


def test_site_sign_out_revokes_the_tokens_of_that_browser(ann):
    """Regression: a token asked for by a signed-in browser stayed valid after the browser
    signed out."""
    browser = _browser()
    mine = _login(client=browser).json()["token"]  # sent with the session cookie
    assert ApiToken.objects.get(prefix=mine[:6]).session_key == browser.session.session_key
    elsewhere = _login().json()["token"]
    assert browser.post("/logout/", **_csrf(browser)).status_code == 302
    assert _as(mine).get("/api/me/").status_code == 401
    assert _as(elsewhere).get("/api/me/").status_code == 200


def test_api_logout_from_a_browser_ends_its_session(ann):
    browser = _browser()
    assert browser.get("/api/me/").status_code == 200
    assert browser.post("/api/auth/logout/", **_csrf(browser)).status_code == 204
    assert browser.get("/api/me/").status_code in (401, 403)


def test_logout_everywhere_revokes_every_token_and_session(ann):
    browsers = [_browser(), _browser()]
    keys = [_login().json()["token"] for _ in range(2)]
    response = _as(keys[0]).post("/api/auth/logout/", {"everywhere": True}, format="json")
    assert response.status_code == 204
    assert [_as(key).get("/api/me/").status_code for key in keys] == [401, 401]
    assert [b.get("/api/me/").status_code for b in browsers] == [401, 401]
    assert not ApiToken.objects.exists()


def test_a_password_change_revokes_the_other_tokens_and_sessions(ann):
    browser = _browser()
    keep, other = _login().json()["token"], _login().json()["token"]
    wrong = _as(keep).post(
        "/api/auth/password/", {"old_password": "nope", "new_password": NEW_PASSWORD}, format="json"
    )
    assert wrong.status_code == 400 and "old_password" in wrong.json()["error"]["fields"]
    weak = _as(keep).post(
        "/api/auth/password/", {"old_password": PASSWORD, "new_password": "ann"}, format="json"
    )
    assert weak.status_code == 400 and "new_password" in weak.json()["error"]["fields"]
    changed = _as(keep).post(
        "/api/auth/password/",
        {"old_password": PASSWORD, "new_password": NEW_PASSWORD},
        format="json",
    )
    assert changed.status_code == 204
    assert _as(keep).get("/api/me/").status_code == 200
    assert _as(other).get("/api/me/").status_code == 401
    assert browser.get("/api/me/").status_code == 401  # signed in with the old password
    assert _login().status_code == 400 and _login(password=NEW_PASSWORD).status_code == 200


def _reset_link() -> tuple[str, str, str]:
    assert len(mail.outbox) == 1
    path = re.search(r"https?://[^/]+(/account/reset/([^/]+)/([^/]+)/)", mail.outbox[0].body)
    return path.group(1), path.group(2), path.group(3)


def test_a_password_reset_by_e_mail_through_the_api(ann):
    key = _login().json()["token"]
    anonymous = client_for(None)
    unknown = anonymous.post("/api/auth/password/reset/", {"email": "x@example.org"}, format="json")
    assert unknown.status_code == 202 and not mail.outbox  # says nothing of who has an account
    asked = anonymous.post("/api/auth/password/reset/", {"email": "ann@example.org"}, format="json")
    assert asked.status_code == 202 and asked.json() == unknown.json()
    assert mail.outbox[0].to == ["ann@example.org"] and "ann" in mail.outbox[0].body
    _, uid, token = _reset_link()
    body = {"uid": uid, "token": token, "new_password": NEW_PASSWORD}
    done = anonymous.post("/api/auth/password/reset/confirm/", body, format="json")
    assert done.status_code == 204
    assert _as(key).get("/api/me/").status_code == 401  # every token revoked
    assert _login(password=NEW_PASSWORD).status_code == 200
    again = anonymous.post("/api/auth/password/reset/confirm/", body, format="json")
    assert again.status_code == 400 and "token" in again.json()["error"]["fields"]


def test_the_e_mail_address_is_set_with_the_password(ann):
    client = client_for(ann)
    refused = client.patch(
        "/api/me/", {"email": "new@example.org", "password": "no"}, format="json"
    )
    assert refused.status_code == 400
    saved = client.patch(
        "/api/me/", {"email": "new@example.org", "password": PASSWORD}, format="json"
    )
    assert saved.status_code == 200 and saved.json()["email"] == "new@example.org"


def test_the_pages_change_and_reset_the_password_and_revoke_tokens(ann):
    key = _login(device="script").json()["token"]
    browser = _browser()
    page = browser.get("/account/")
    assert page.status_code == 200 and "script" in page.content.decode()
    assert key not in page.content.decode()
    changed = browser.post(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD,
         "csrfmiddlewaretoken": browser.cookies["csrftoken"].value},
    )  # fmt: skip
    assert changed.status_code == 302 and changed["Location"] == "/account/password/changed/"
    assert _as(key).get("/api/me/").status_code == 401
    assert browser.get("/account/").status_code == 200  # this browser stays signed in

    # Forgotten: a link by e-mail, a new password, every session and token gone.
    key = _login(password=NEW_PASSWORD).json()["token"]
    stranger = Client()
    stranger.get("/account/reset/")
    sent = stranger.post("/account/reset/", {"email": "ann@example.org"})
    assert sent.status_code == 302 and sent["Location"] == "/account/reset/sent/"
    link, _, _ = _reset_link()
    form = stranger.get(link, follow=True)
    assert form.status_code == 200 and "Choose a new password" in form.content.decode()
    done = stranger.post(
        form.redirect_chain[-1][0], {"new_password1": PASSWORD, "new_password2": PASSWORD}
    )
    assert done.status_code == 302 and done["Location"] == "/account/reset/done/"
    assert _as(key).get("/api/me/").status_code == 401
    assert browser.get("/account/").status_code == 302  # signed out
    assert _login().status_code == 200


@pytest.mark.postgres
def test_drf_tokens_are_carried_over_and_their_table_dropped(ann):
    """The migration from DRF's one token per user: each goes on working as a device token, and
    the table holding the keys themselves is dropped."""
    import importlib

    from django.apps import apps
    from django.db import connection

    migration = importlib.import_module("accounts.migrations.0001_api_tokens")
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, user_id integer, "
            "created timestamptz)"
        )
        cursor.execute(
            "INSERT INTO authtoken_token VALUES ('a' || repeat('0', 39), %s, now())", [ann.pk]
        )
    with connection.schema_editor(atomic=False) as editor:
        migration.tokens_carried_over(apps, editor)
    assert "authtoken_token" not in connection.introspection.table_names()
    assert _as("a" + "0" * 39).get("/api/me/").json()["username"] == "ann"


def test_the_admin_lists_tokens_and_revokes_them_without_their_keys(client, ann):
    from django.urls import reverse

    key = _login(device="phone").json()["token"]
    admin = get_user_model().objects.create_superuser("root", password=PASSWORD)
    client.force_login(admin)
    listed = client.get(reverse("admin:accounts_apitoken_changelist"))
    assert listed.status_code == 200 and "phone" in listed.content.decode()
    token = ApiToken.objects.get(user=ann)
    shown = client.get(reverse("admin:accounts_apitoken_change", args=[token.pk]))
    assert shown.status_code == 200 and token.digest not in shown.content.decode()
    assert key not in shown.content.decode()
    deleted = client.post(
        reverse("admin:accounts_apitoken_delete", args=[token.pk]), {"post": "yes"}
    )
    assert deleted.status_code == 302 and _as(key).get("/api/me/").status_code == 401
