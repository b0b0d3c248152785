"""One sign-in throttle for every door (the API, the site's form, the Django admin): failed
attempts are limited per username and per client address.

Only failures count, so a room of people signing in at once from one address spends nothing;
a guesser gets `TALLY_LOGIN_RATE` wrong passwords per username (default 10 a minute), across
every spelling of the name that authentication treats as the same account, and an address gets
`TALLY_LOGIN_ADDRESS_RATE` failures (default 60 a minute) whatever names it tries.

Ten wrong passwords from anywhere must not lock the owner out (issue 24): an address from which
the account has signed in before (in the last `KNOWN_ADDRESS_DAYS` days; an IPv6 address by its
/64, which a device keeps while its address changes) has a username budget of its own. Guesses
from everywhere else share the username's budget; guesses from a known address spend only that
address's, so a guesser there gets as few tries and the owner elsewhere is not held up by them.

Each attempt reserves one unit of both budgets before the password is checked (so parallel
guesses cannot overshoot), and a successful attempt gives its units back. Budgets are counters
per fixed window in the cache (Redis in production: one atomic increment each), so every process
shares them. The authentication backend (`accounts.backends`) applies this to every
`authenticate()` call, which is the one place all doors pass through.
"""

from __future__ import annotations

import contextlib
import ipaddress
import time
import unicodedata
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache


class SigninThrottled(Exception):
    def __init__(self, wait: float) -> None:
        super().__init__(f"Too many failed sign-ins; try again in {int(wait) + 1} seconds.")
        self.wait = wait


def username_key(username: str) -> str:
    """The account a username names, as authentication sees it: NFKC (Django's own username
    normalisation: fullwidth and other compatibility variants are the same letters), then
    case-folded (usernames are unique regardless of case)."""
    return unicodedata.normalize("NFKC", username).casefold()[:150]


def _trusted(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in settings.TALLY_TRUSTED_PROXIES)


def client_address(request) -> str:
    """The client's address: REMOTE_ADDR, unless that is a trusted proxy
    (`TALLY_TRUSTED_PROXIES`); then the right-most X-Forwarded-For entry that is not one. A
    client can prepend what it likes to X-Forwarded-For, never append, so entries left of the
    first untrusted one are ignored."""
    address = request.META.get("REMOTE_ADDR", "")
    if not _trusted(address):
        return address
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    for hop in reversed([part for part in forwarded if part]):
        if not _trusted(hop):
            return hop
    return address


def _rate(value: str) -> tuple[int, int]:
    count, _, period = value.partition("/")
    seconds = {"s": 1, "m": 60, "h": 3600, "d": 86400}[period[0]]
    return int(count), seconds


@dataclass
class _Budget:
    key: str
    limit: int
    period: int

    def take(self, now: float) -> tuple[bool, float]:
        """One unit; (within the budget, seconds until the window ends)."""
        window = int(now // self.period)
        key = f"{self.key}:{window}"
        cache.add(key, 0, timeout=self.period * 2)
        try:
            used = cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, timeout=self.period * 2)
            used = 1
        self.taken_key = key
        return used <= self.limit, (window + 1) * self.period - now

    def give_back(self) -> None:
        with contextlib.suppress(ValueError):  # the window is over: nothing to give back
            cache.decr(self.taken_key)


KNOWN_ADDRESS_DAYS = 90


def _network(address: str) -> str:
    """What marks an address as known: itself (IPv4), its /64 (IPv6, whose last 64 bits a
    device changes for privacy), or the text as given when it is not an address."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 4:
        return str(ip)
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.ip_network(f"{ip}/64", strict=False))


class SigninAttempt:
    """One sign-in attempt's reservation; `succeeded()` gives it back and marks the address as
    one the account signs in from."""

    def __init__(self, budgets: list[_Budget], known_key: str | None = None) -> None:
        self.budgets = budgets
        self.known_key = known_key

    def succeeded(self) -> None:
        for budget in self.budgets:
            budget.give_back()
        if self.known_key:
            cache.set(self.known_key, 1, timeout=KNOWN_ADDRESS_DAYS * 86400)


def signin_attempt_start(*, address: str, username: str) -> SigninAttempt:
    """Reserve one failure of the username's and the address's budgets, or raise
    `SigninThrottled` (with the seconds to wait) when either is spent. The username's budget
    is the one of this address when the account has signed in from it before, else the one
    shared by every other address."""
    per_user, user_period = _rate(settings.TALLY_LOGIN_RATE)
    per_address, address_period = _rate(settings.TALLY_LOGIN_ADDRESS_RATE)
    account = username_key(username)
    known_key = f"signin-known:{account}:{_network(address)}" if address else None
    user_key = f"signin-fail:user:{account}"
    if known_key and cache.get(known_key):
        user_key += f":from:{_network(address)}"
    budgets = [
        _Budget(user_key, per_user, user_period),
        _Budget(f"signin-fail:address:{address}", per_address, address_period),
    ]
    now = time.time()
    wait = 0.0
    for budget in budgets:
        within, seconds = budget.take(now)
        if not within:
            wait = max(wait, seconds)
    attempt = SigninAttempt(budgets, known_key)
    if wait:
        attempt.known_key = None  # nor does it make the address known
        attempt.succeeded()  # a refused attempt tried no password: it spends nothing
        raise SigninThrottled(wait)
    return attempt
