"""The authentication backend: Django's, with the sign-in throttle (accounts/signin.py) and one
normalisation of the username for every door.

Every sign-in door (the API's login, the site's form, the Django admin) calls `authenticate()`,
which calls this backend: throttling here covers them all, and any door added later. A throttled
attempt is refused before the password is checked; the door learns why from
`request.signin_throttled` (the `SigninThrottled` error, with the seconds to wait) and answers 429.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied

from accounts.signin import SigninThrottled, client_address, signin_attempt_start


class ThrottledModelBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        User = get_user_model()
        if username is None:
            username = kwargs.get(User.USERNAME_FIELD)
        if username is None or password is None:
            return None
        # Django's forms normalise (NFKC) before calling here; the API now gets the same.
        username = User.normalize_username(username)
        address = client_address(request) if request is not None else ""
        try:
            attempt = signin_attempt_start(address=address, username=username)
        except SigninThrottled as exc:
            if request is not None:
                request.signin_throttled = exc
            raise PermissionDenied(str(exc)) from exc  # no other backend may check it
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            # The password was checked here: no backend after this one may check it again
            # (Django's own stays listed only so that sessions signed in through it stay valid).
            raise PermissionDenied("wrong username or password")
        attempt.succeeded()
        return user


def throttled(request) -> SigninThrottled | None:
    """Why `authenticate()` refused this request's attempt unchecked, if it did."""
    return getattr(request, "signin_throttled", None)
