"""Sign-in rate limits for the HTML forms, shared with the API's login (same cache keys).

The API's throttles are DRF classes; a form view has a plain `HttpRequest`, whose POST body is
`request.POST` rather than `request.data`. `_FormRequest` gives them that view, so the form and the
API spend one budget per address and per username.
"""

from accounts.throttles import LoginThrottle, LoginUsernameThrottle


class _FormRequest:
    def __init__(self, request):
        self.META = request.META
        self.data = request.POST
        self.user = request.user


def login_allowed(request) -> tuple[bool, float | None]:
    """Record one sign-in attempt; (allowed, seconds to wait if not)."""
    shim = _FormRequest(request)
    for throttle in (LoginThrottle(), LoginUsernameThrottle()):
        if not throttle.allow_request(shim, None):
            return False, throttle.wait()
    return True, None
