"""The pages' HTTP contract: who may see what (the four personas on every page), sign-in with
its rate limit, sign-up, invite links, and text from corpora escaped."""

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Membership
from tests.frontend.conftest import PASSWORD, session_client_for

pytestmark = pytest.mark.django_db(transaction=True)


def _pages(project_id):
    return {
        "home": "/",
        "annotate": f"/annotate/{project_id}/",
        "dashboard": f"/projects/{project_id}/",
        "new project": "/projects/new/",
    }


# page -> persona -> expected status (302 = to the sign-in page)
EXPECTED = {
    "home": {"manager": 200, "annotator": 200, "outsider": 200, "anonymous": 302},
    "annotate": {"manager": 200, "annotator": 200, "outsider": 404, "anonymous": 302},
    "dashboard": {"manager": 200, "annotator": 403, "outsider": 404, "anonymous": 302},
    "new project": {"manager": 200, "annotator": 200, "outsider": 200, "anonymous": 302},
}


@pytest.mark.parametrize("page", list(EXPECTED))
@pytest.mark.parametrize("persona", ["manager", "annotator", "outsider", "anonymous"])
def test_page_permissions(personas, project, page, persona):
    url = _pages(project.pk)[page]
    response = personas[persona].get(url)
    assert response.status_code == EXPECTED[page][persona]
    if response.status_code == 302:
        assert response["Location"] == f"/login/?next={url}"


def test_unknown_project_is_404_for_everyone_signed_in(personas, project):
    for persona in ("manager", "annotator", "outsider"):
        assert personas[persona].get("/annotate/999999/").status_code == 404
        assert personas[persona].get("/projects/999999/").status_code == 404


def test_error_pages_are_tally_pages(personas, project):
    missing = personas["outsider"].get(f"/projects/{project.pk}/")
    assert "Your projects" in missing.content.decode()
    refused = personas["annotator"].get(f"/projects/{project.pk}/")
    assert "Only the project's managers" in refused.content.decode()


def test_pages_do_not_accept_posts(personas, project):
    assert personas["manager"].post(f"/annotate/{project.pk}/").status_code == 405
    assert personas["manager"].post(f"/projects/{project.pk}/").status_code == 405


def test_home_lists_projects_by_role(personas, project):
    manager_page = personas["manager"].get("/").content.decode()
    assert f'href="/projects/{project.pk}/"' in manager_page
    annotator_page = personas["annotator"].get("/").content.decode()
    assert f'href="/annotate/{project.pk}/"' in annotator_page
    assert f'href="/projects/{project.pk}/"' not in annotator_page
    outsider_page = personas["outsider"].get("/").content.decode()
    assert f"/annotate/{project.pk}/" not in outsider_page


def test_project_name_is_escaped(personas, project):
    for url in ("/", f"/annotate/{project.pk}/", f"/projects/{project.pk}/"):
        page = personas["manager"].get(url).content.decode()
        assert "<b>things</b>" not in page
        assert "&lt;b&gt;things&lt;/b&gt;" in page


def test_annotate_page_is_gzipped_and_small(personas, project):
    response = personas["annotator"].get(f"/annotate/{project.pk}/", HTTP_ACCEPT_ENCODING="gzip")
    assert response["Content-Encoding"] == "gzip"
    assert len(response.content) < 3000
    assert "csrftoken" in response.cookies


def test_sign_in_and_out(annotator):
    client = session_client_for(None)
    page = client.get("/login/?next=/annotate/1/")
    assert page.status_code == 200
    response = client.post(
        "/login/", {"username": "annotator", "password": PASSWORD, "next": "/annotate/1/"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/annotate/1/"
    assert client.get("/").status_code == 200
    assert client.post("/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_sign_in_refuses_foreign_redirects(annotator):
    response = session_client_for(None).post(
        "/login/", {"username": "annotator", "password": PASSWORD, "next": "https://evil.example/"}
    )
    assert response["Location"] == "/"


def test_sign_in_is_rate_limited_with_the_api_budget(annotator):
    """The form and `POST /api/auth/login/` spend one budget (10 a minute by default)."""
    client = session_client_for(None)
    for _ in range(5):
        bad = client.post("/login/", {"username": "annotator", "password": "wrong"})
        assert bad.status_code == 200
        assert "Please enter a correct username and password" in bad.content.decode()
        api = client.post(
            "/api/auth/login/",
            {"username": "annotator", "password": "wrong"},
            content_type="application/json",
        )
        assert api.status_code == 400
    blocked = client.post("/login/", {"username": "annotator", "password": PASSWORD})
    assert blocked.status_code == 429
    assert "Too many sign-in attempts" in blocked.content.decode()
    assert "_auth_user_id" not in client.session


def test_signup_creates_account_signs_in_and_follows_next(transactional_db):
    client = session_client_for(None)
    response = client.post(
        "/signup/", {"username": "newbie", "password": PASSWORD, "next": "/join/abc"}
    )
    assert response.status_code == 302
    assert response["Location"] == "/join/abc"
    user = get_user_model().objects.get(username="newbie")
    assert client.session["_auth_user_id"] == str(user.pk)


@pytest.mark.parametrize(
    "target", ["https://evil.example/", "//evil.example/", "/\\evil.example", "inf", "0", "<b>"]
)
def test_signup_goes_home_for_a_next_that_is_not_a_path_here(transactional_db, target):
    client = session_client_for(None)
    response = client.post("/signup/", {"username": "newbie", "password": PASSWORD, "next": target})
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert get_user_model().objects.filter(username="newbie").exists()


@pytest.mark.parametrize("target", ["//evil.example/", "inf", "<b>"])
def test_sign_in_goes_home_for_a_next_that_is_not_a_path_here(annotator, target):
    response = session_client_for(None).post(
        "/login/", {"username": "annotator", "password": PASSWORD, "next": target}
    )
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_signup_rejects_weak_password_and_taken_name(annotator):
    client = session_client_for(None)
    weak = client.post("/signup/", {"username": "someone", "password": "123"})
    assert weak.status_code == 400
    assert not get_user_model().objects.filter(username="someone").exists()
    taken = client.post("/signup/", {"username": "annotator", "password": PASSWORD})
    assert taken.status_code == 400
    assert "already taken" in taken.content.decode().lower()


def test_join_page_offers_sign_in_or_sign_up_when_signed_out(project):
    page = session_client_for(None).get(f"/join/{project.invite_code}")
    assert page.status_code == 200
    html = page.content.decode()
    assert f'value="/join/{project.invite_code}"' in html  # both forms come back here
    assert "join.js" not in html


def test_join_page_runs_the_join_script_when_signed_in(personas, project):
    html = personas["outsider"].get(f"/join/{project.invite_code}").content.decode()
    assert "join.js" in html
    assert f'data-code="{project.invite_code}"' in html
    # Rendering the page joins nobody: the script does, through the API.
    assert not Membership.objects.filter(project=project, user__username="outsider").exists()


@pytest.mark.parametrize(
    ("alpha", "true_percent", "odds"),
    [(3.0, "80 %", "20 times"), (8.0, "99.8 %", "2,981 times"), (0.5, "25 %", "1.6 times")],
)
def test_the_invite_page_says_what_the_privacy_level_means(manager, alpha, true_percent, odds):
    """Issue 24: the signed-out invite page of a private project names α and says in plain
    words what it means for an answer (krr, one tag asked, a window of 5 words)."""
    from tests.support.factories import make_project

    project = make_project(owner=manager, private=True, alpha=alpha, tags_per_task=1, window_size=5)
    html = session_client_for(None).get(f"/join/{project.invite_code}").content.decode()
    assert f"α = {alpha:g}</b> per answer" in html
    assert f"sends your true count about <b>{true_percent} of the time</b>" in html
    assert f"at most {odds} likelier under your true answer" in html
    assert ("very likely your true count" in html) == (alpha == 8.0)
    assert "can be traced back to you" not in html  # the old promise, whatever the level
    plain = make_project(owner=manager, window_size=5)
    page = session_client_for(None).get(f"/join/{plain.invite_code}")
    assert "private" not in page.content.decode()


def test_join_code_box_goes_to_the_invite_link(personas):
    response = personas["outsider"].get("/join/", {"code": " Zx81 "})
    assert response["Location"] == "/join/Zx81"
    assert personas["outsider"].get("/join/", {"code": ""})["Location"] == "/"


def test_new_project_page_offers_presets(personas):
    html = personas["manager"].get("/projects/new/").content.decode()
    assert 'id="presets"' in html
    assert '"ud_upos"' in html and '"ptb"' in html
