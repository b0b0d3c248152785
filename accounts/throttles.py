"""Rate limits: sign-in and registration attempts, per client address and per username."""

from collections.abc import Mapping

from rest_framework.throttling import SimpleRateThrottle


class LoginThrottle(SimpleRateThrottle):
    """`login` rate (settings REST_FRAMEWORK DEFAULT_THROTTLE_RATES) per client address.

    The address is REMOTE_ADDR only: a client-supplied X-Forwarded-For would let an attacker pick
    a fresh identity for every attempt. (Behind a proxy, set it up to rewrite REMOTE_ADDR.)
    """

    scope = "login"

    def get_ident(self, request):
        return request.META.get("REMOTE_ADDR", "")

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


class LoginUsernameThrottle(SimpleRateThrottle):
    """The same rate per target username, so a password cannot be guessed from many addresses."""

    scope = "login"

    def get_cache_key(self, request, view):
        # A body that is not a JSON object names no username; the view then says what is wrong.
        data = request.data
        username = str(data.get("username", ""))[:150].lower() if isinstance(data, Mapping) else ""
        if not username:
            return None
        return self.cache_format % {"scope": "login-user", "ident": username}
