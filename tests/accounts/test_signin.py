"""One sign-in throttle for the API, the site and the Django admin (issue 16, findings 5 and 6;
issue 17's sign-in item): failed attempts per normalised username and per client address."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, RequestFactory, override_settings

from accounts.signin import client_address, username_key
from tests.support.factories import client_for

PASSWORD = "correct horse 42"


@pytest.fixture
def victim(db):
    user = get_user_model().objects.create_user("victim", password=PASSWORD)
    user.is_staff = user.is_superuser = True  # the admin door too
    user.save()
    return user


def _api(username, password, address="203.0.113.7"):
    return client_for(None).post(
        "/api/auth/login/",
        {"username": username, "password": password},
        format="json",
        REMOTE_ADDR=address,
    )


def _site(username, password, address="203.0.113.7"):
    client = Client(REMOTE_ADDR=address)
    return client.post("/login/", {"username": username, "password": password}), client


def _admin(username, password, address="203.0.113.7"):
    client = Client(REMOTE_ADDR=address)
    response = client.post(
        "/admin/login/?next=/admin/",
        {"username": username, "password": password, "next": "/admin/"},
    )
    return response, client


def test_unicode_variants_of_a_username_share_its_budget(victim):
    """Regression: after 10 wrong guesses for `victim`, `ｖictim` (fullwidth v) had a fresh
    budget of 10, and the right password with it signed in as victim."""
    for _ in range(10):
        assert _api("victim", "guess").status_code == 400
    # From other addresses too: the username's budget is spent, whatever the spelling.
    variants = ["\uff56ictim", "VICTIM", "Victim", "\uff36\uff29\uff23\uff34\uff29\uff2d"]
    for i, variant in enumerate(variants):
        response = _api(variant, "guess", address=f"198.51.100.{i}")
        assert response.status_code == 429, variant
        assert response.json()["error"]["code"] == "throttled"
        assert int(response["Retry-After"]) >= 1
    # Not checked, so not signed in, even with the right password.
    assert _api("\uff56ictim", PASSWORD, address="192.0.2.1").status_code == 429
    response, client = _site("\uff56ictim", PASSWORD, address="192.0.2.2")
    assert response.status_code == 429 and "_auth_user_id" not in client.session
    assert username_key("\uff56ictim") == username_key("VICTIM") == "victim"


def test_the_api_accepts_the_same_spellings_as_the_forms(victim):
    """Authentication normalises (NFKC) at every door, so the throttle's key is the account."""
    assert _api("\uff56ictim", PASSWORD).status_code == 200
    response, client = _site("\uff56ictim", PASSWORD)
    assert response.status_code == 302 and client.session["_auth_user_id"] == str(victim.pk)


def test_the_three_doors_spend_one_budget_of_ten_guesses(victim):
    """Regression: 40 wrong passwords at /admin/login/ answered 200 each, then the right one
    logged in: the admin had no limit at all."""
    for _ in range(4):
        assert _api("victim", "guess").status_code == 400
    for _ in range(3):
        response, _ = _site("victim", "guess")
        assert response.status_code == 200
        assert "Please enter a correct username and password" in response.content.decode()
    for _ in range(3):
        response, _ = _admin("\uff56ictim", "guess")
        assert response.status_code == 200
        assert "Please enter the correct username and password" in response.content.decode()
    response, client = _admin("victim", PASSWORD)
    assert "Too many sign-in attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session
    response, client = _site("victim", PASSWORD)
    assert response.status_code == 429 and "_auth_user_id" not in client.session
    assert _api("victim", PASSWORD).status_code == 429


def test_fifty_people_sign_in_at_once_from_one_address(db):
    """Issue 17: the limit counted successful sign-ins per address, so a class behind one
    address could not all sign in (the 11th in a minute was refused)."""
    User = get_user_model()
    for i in range(50):
        User.objects.create_user(f"student-{i}", password=PASSWORD)
    for i in range(25):
        assert _api(f"student-{i}", PASSWORD).status_code == 200, i
    for i in range(25, 50):
        response, client = _site(f"student-{i}", PASSWORD)
        assert response.status_code == 302, i
    # A few typos among them spend a little of the address's budget, nothing more.
    for i in range(5):
        assert _api(f"student-{i}", "typo").status_code == 400
    assert _api("student-0", PASSWORD).status_code == 200


@override_settings(TALLY_LOGIN_ADDRESS_RATE="60/min")
def test_an_address_gets_sixty_failures_whatever_names_it_tries(db):
    for i in range(60):
        assert _api(f"nobody-{i}", "guess").status_code == 400, i
    assert _api("nobody-else", "guess").status_code == 429
    assert _api("nobody-else", "guess", address="198.51.100.9").status_code == 400


def test_failures_from_many_addresses_still_spend_the_usernames_budget(victim):
    for i in range(10):
        assert _api("victim", "guess", address=f"198.51.100.{i}").status_code == 400
    assert _api("victim", PASSWORD, address="192.0.2.1").status_code == 429


@override_settings(TALLY_TRUSTED_PROXIES=[])
def test_without_trusted_proxies_forwarded_for_is_ignored():
    request = RequestFactory().get("/", REMOTE_ADDR="203.0.113.7", HTTP_X_FORWARDED_FOR="10.0.0.1")
    assert client_address(request) == "203.0.113.7"


def test_behind_a_trusted_proxy_the_client_is_the_last_untrusted_hop(settings):
    import ipaddress

    settings.TALLY_TRUSTED_PROXIES = [ipaddress.ip_network("172.16.0.0/12")]
    forged = "6.6.6.6, 203.0.113.7, 172.18.0.3"  # a client-made entry, the client, a proxy
    request = RequestFactory().get("/", REMOTE_ADDR="172.18.0.2", HTTP_X_FORWARDED_FOR=forged)
    assert client_address(request) == "203.0.113.7"
    direct = RequestFactory().get("/", REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="1.1.1.1")
    assert client_address(direct) == "203.0.113.9"


def test_a_new_account_stays_signed_in_and_older_sessions_stay_valid(db, victim):
    """Signing up signs in for the next requests too; a session signed in through Django's own
    backend (before the throttled one existed) is still honoured."""
    client = Client()
    response = client.post("/signup/", {"username": "newbie", "password": PASSWORD, "next": "/"})
    assert response.status_code == 302
    assert client.get("/api/me/").json()["username"] == "newbie"
    older = Client()
    older.force_login(victim, backend="django.contrib.auth.backends.ModelBackend")
    assert older.get("/api/me/").json()["username"] == "victim"


def test_a_wrong_password_is_checked_once(victim, monkeypatch):
    from django.contrib.auth.hashers import MD5PasswordHasher

    checks = []
    original = MD5PasswordHasher.verify
    monkeypatch.setattr(
        MD5PasswordHasher, "verify", lambda self, *a: checks.append(1) or original(self, *a)
    )
    assert _api("victim", "guess").status_code == 400
    assert len(checks) == 1


def _compose_default(value: str) -> str:
    """`${NAME:-default}` as docker compose expands it with NAME unset."""
    import re

    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)


def test_the_compose_stack_trusts_only_its_proxy(settings):
    """Issue 24: the compose file trusted all of 10/8, 172.16/12 and 192.168/16, so any client
    on those networks (or every client behind Docker's userland proxy, which connects from the
    network's gateway) set its own address in X-Forwarded-For and escaped every per-address
    limit. By default only the proxy's own fixed address is trusted: a client-set
    X-Forwarded-For does not change the key its sign-ins and sign-ups are counted under."""
    import ipaddress

    import yaml

    from accounts.throttles import RegisterThrottle
    from config.env import env_networks

    compose = yaml.safe_load((settings.BASE_DIR / "docker-compose.yml").read_text())
    services = compose["services"]
    proxy = _compose_default(services["proxy"]["networks"]["default"]["ipv4_address"])
    subnet = _compose_default(compose["networks"]["default"]["ipam"]["config"][0]["subnet"])
    web = {k: _compose_default(str(v)) for k, v in services["web"]["environment"].items()}
    assert web["TALLY_TRUSTED_PROXIES"] == web["FORWARDED_ALLOW_IPS"] == proxy
    events = [_compose_default(part) for part in services["events"]["command"]]
    assert events[events.index("--forwarded-allow-ips") + 1] == proxy
    gateway = str(next(ipaddress.ip_network(subnet).hosts()))  # Docker's userland proxy
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TALLY_TRUSTED_PROXIES", web["TALLY_TRUSTED_PROXIES"])
        settings.TALLY_TRUSTED_PROXIES = env_networks("TALLY_TRUSTED_PROXIES")

    def keys(remote: str, forwarded: str | None) -> tuple[str, str]:
        extra = {} if forwarded is None else {"HTTP_X_FORWARDED_FOR": forwarded}
        request = RequestFactory().post("/api/auth/register/", REMOTE_ADDR=remote, **extra)
        return client_address(request), RegisterThrottle().get_cache_key(request, None)

    # Through the proxy: nginx appends the address it saw; what the client wrote is ignored.
    for client in ("203.0.113.7", gateway):
        honest = keys(proxy, client)
        assert honest[0] == client
        for forged in ("6.6.6.6", "10.0.0.9", f"1.2.3.4, {proxy}"):
            assert keys(proxy, f"{forged}, {client}") == honest
    # Straight to the web server from the network (another container, an intranet client): its
    # own address, whatever it forwards.
    for neighbour in ("172.30.57.9", "10.1.2.3", "192.168.1.20", gateway):
        direct = keys(neighbour, None)
        assert direct[0] == neighbour
        assert keys(neighbour, "6.6.6.6") == keys(neighbour, "7.7.7.7") == direct


def test_guesses_from_elsewhere_do_not_lock_the_owner_out_of_a_known_address(victim):
    """Issue 24: ten wrong passwords from anywhere locked a known user out for a minute. The
    owner signs in from an address they signed in from before; a new address is still held to
    the username's budget, which the guesser spent."""
    home, office = "203.0.113.7", "2001:db8:1:2::10"
    assert _api("victim", PASSWORD, address=home).status_code == 200
    assert _api("victim", PASSWORD, address=office).status_code == 200
    for i in range(10):
        assert _api("victim", "guess", address=f"198.51.100.{i}").status_code == 400
    assert _api("victim", PASSWORD, address="198.51.100.99").status_code == 429
    assert _api("victim", PASSWORD, address=home).status_code == 200
    response, client = _site("\uff56ictim", PASSWORD, address=home)  # every door and spelling
    assert response.status_code == 302 and client.session["_auth_user_id"] == str(victim.pk)
    # The phone's IPv6 address changed within its /64: still the same network.
    assert _api("victim", PASSWORD, address="2001:db8:1:2::beef").status_code == 200


def test_a_known_address_gets_no_more_guesses_than_any_other(victim):
    """A guesser behind the owner's address (the same office) has that address's own budget
    of ten, not an unlimited one; and spending it does not lock the owner out elsewhere."""
    home = "203.0.113.7"
    assert _api("victim", PASSWORD, address=home).status_code == 200
    for _ in range(10):
        assert _api("victim", "guess", address=home).status_code == 400
    assert _api("victim", "guess", address=home).status_code == 429
    assert _api("victim", PASSWORD, address=home).status_code == 429
    assert _api("victim", PASSWORD, address="192.0.2.44").status_code == 200


def test_a_refused_or_failed_attempt_makes_no_address_known(victim):
    for i in range(10):
        assert _api("victim", "guess", address=f"198.51.100.{i}").status_code == 400
    assert _api("victim", PASSWORD, address="192.0.2.1").status_code == 429  # refused unchecked
    assert _api("victim", PASSWORD, address="192.0.2.1").status_code == 429
    assert _api("victim", "guess", address="198.51.100.0").status_code == 429
