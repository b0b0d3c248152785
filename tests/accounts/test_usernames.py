"""Sign-up names (issue 24, item 10): one spelling per name, no name passing for another."""

import pytest
from django.contrib.auth import get_user_model

from tests.support.factories import client_for

PASSWORD = "correct horse 42"
pytestmark = pytest.mark.django_db


def register(username):
    return client_for(None).post(
        "/api/auth/register/", {"username": username, "password": PASSWORD}, format="json"
    )


@pytest.fixture
def victor(db):
    return get_user_model().objects.create_user("victor", password=PASSWORD)


@pytest.mark.parametrize("look_alike", ["ｖｉｃｔｏｒ", "ＶＩＣＴＯＲ", "ｖictor"])
def test_a_fullwidth_spelling_of_an_existing_name_is_taken(victor, look_alike):
    """Regression: fullwidth look-alikes of `victor` were accepted as new accounts, which then
    could never sign in (every sign-in reads the name in NFKC: `victor`)."""
    response = register(look_alike)
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["username"] == ["Already taken."]


def test_a_fullwidth_name_is_stored_as_it_signs_in(db):
    response = register("ｎｅｗｂｉｅ")
    assert response.status_code == 201
    assert response.json()["user"]["username"] == "newbie"
    login = client_for(None).post(
        "/api/auth/login/", {"username": "ｎｅｗｂｉｅ", "password": PASSWORD}, format="json"
    )
    assert login.status_code == 200 and login.json()["user"]["username"] == "newbie"


@pytest.mark.parametrize(
    ("look_alike", "scripts"),
    [
        ("vіctor", "Cyrillic and Latin"),
        ("viсtor", "Cyrillic and Latin"),
        ("vιctor", "Greek and Latin"),
    ],
)
def test_a_name_mixing_alphabets_is_refused(victor, look_alike, scripts):
    response = register(look_alike)
    assert response.status_code == 400
    message = response.json()["error"]["fields"]["username"][0]
    assert f"one alphabet: this one mixes {scripts}" in message


def test_a_name_in_look_alike_letters_of_an_existing_one_is_refused(db):
    get_user_model().objects.create_user("scope", password=PASSWORD)
    response = register("ѕсоре")  # all Cyrillic
    assert response.status_code == 400
    assert "looks the same as the existing user “scope”" in response.json()["error"]["message"]
    # Names in other alphabets, and Cyrillic that passes for no one, are welcome.
    for name in ("ирина", "σοφία", "山田さん", "ѕсоре2"):
        assert register(name).status_code == 201, name


def test_the_sign_up_form_says_the_same(victor):
    response = client_for(None).post("/signup/", {"username": "vіctor", "password": PASSWORD})
    assert response.status_code == 400
    assert "one alphabet" in response.content.decode()
    response = client_for(None).post("/signup/", {"username": "ｖｉｃｔｏｒ", "password": PASSWORD})
    assert "already taken" in response.content.decode().lower()
    assert get_user_model().objects.count() == 1


@pytest.mark.parametrize(
    ("existing", "look_alike"),
    [
        ("annotator", "annotat0r"),
        ("manager", "mañager"),
        ("manager", "manager."),
        ("manager", "_Manager-"),
        ("manager", "rnanager"),
        ("will", "wi1l"),
        ("will", "vvill"),
        ("olga", "0LGA"),
        ("ilse", "ILSE."),
        ("Ilse", "llse"),
        ("Ilse", "ilse."),
        ("zoe", "zoë"),
        ("lena", "łena"),
    ],
)
def test_a_name_with_the_skeleton_of_an_existing_one_is_refused(existing, look_alike):
    """Regression (issue 44, item 8): `annotat0r`, `mañager` and `manager.` were accepted
    beside `annotator` and `manager`."""
    get_user_model().objects.create_user(existing, password=PASSWORD)
    response = register(look_alike)
    assert response.status_code == 400, look_alike
    message = response.json()["error"]["message"]
    assert f"looks the same as the existing user “{existing}”" in message


def test_names_that_only_share_letters_are_welcome(db):
    get_user_model().objects.create_user("manager", password=PASSWORD)
    for name in ("manager2", "manage", "mana.ger", "managers", "nanager", "ma_nager"):
        assert register(name).status_code == 201, name


def test_the_database_finds_every_name_of_a_skeleton(db):
    """The query that finds look-alikes (a regular expression on the stored names) finds every
    name whose skeleton is the new one's, in the database's own matching."""
    import random

    from accounts.usernames import look_alike_of, username_skeletons

    rng = random.Random(7)
    pieces = ["a", "à", "á", "ä", "а", "o", "0", "ö", "ο", "l", "1", "I", "ł", "rn", "m", "vv",
              "w", "e", "é", "е", "ñ", "n", "s", "ѕ", "c", "с", "."]  # fmt: skip
    User = get_user_model()
    for _ in range(60):
        name = "".join(rng.choice(pieces) for _piece in range(rng.randint(2, 6))).strip(".") or "x"
        if User.objects.filter(username__iexact=name).exists():
            continue
        user = User.objects.create_user(f"{name}"[:150], password=None)
        twin = "".join(rng.choice([c, c.upper()]) for c in name) + rng.choice(["", ".", "-"])
        if username_skeletons(twin) & username_skeletons(name):
            found = look_alike_of(twin)
            assert found is not None and found.pk == user.pk, (name, twin)
        user.delete()
