"""Token authentication for API clients, with the token lookup as one prepared SQL statement."""

from rest_framework import authentication, exceptions

from annotation import sql


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's `Authorization: Token <key>` scheme; `request.auth` is the key."""

    def authenticate_credentials(self, key):
        user = sql.user_for_token(key)
        if user is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return user, key
