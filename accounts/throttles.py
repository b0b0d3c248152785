"""Rate limit of registrations, per client address (`TALLY_REGISTER_RATE`, default 60 a minute:
a room of people signing up at once fits). Sign-in has its own throttle, on failed attempts, in
every door at once: see accounts/signin.py."""

from rest_framework.throttling import SimpleRateThrottle

from accounts.signin import client_address


class RegisterThrottle(SimpleRateThrottle):
    scope = "register"

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}


class PasswordResetThrottle(SimpleRateThrottle):
    """Password-reset e-mails asked for per client address (`TALLY_PASSWORD_RESET_RATE`, default
    10 an hour): each sends mail, to addresses the asker need not own."""

    scope = "password_reset"

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}
