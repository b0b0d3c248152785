"""Sign-in forms of the site and the Django admin: Django's, saying so when the sign-in throttle
(accounts/signin.py, applied by the authentication backend) refused the attempt unchecked."""

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from accounts.backends import throttled


class _ThrottleMessage:
    def get_invalid_login_error(self):
        refused = throttled(self.request)
        if refused is not None:
            return ValidationError(
                "Too many sign-in attempts. Try again in %(seconds)d seconds.",
                code="throttled",
                params={"seconds": int(refused.wait) + 1},
            )
        return super().get_invalid_login_error()


class SigninForm(_ThrottleMessage, AuthenticationForm):
    pass


class AdminSigninForm(_ThrottleMessage, AdminAuthenticationForm):
    pass
