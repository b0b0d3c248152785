"""The sign-up form's rate limit, shared with `POST /api/auth/register/` (same cache keys).

The API's throttle is a DRF class; a form view has a plain `HttpRequest`. Sign-in needs nothing
here: its throttle lives in the authentication backend (accounts/signin.py).
"""

from accounts.throttles import RegisterThrottle


def signup_allowed(request) -> tuple[bool, float | None]:
    """Record one sign-up attempt; (allowed, seconds to wait if not)."""
    throttle = RegisterThrottle()
    if not throttle.allow_request(request, None):
        return False, throttle.wait()
    return True, None
