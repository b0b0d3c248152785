"""Which account a device's pages are for: the signed-in cookie that the annotator page and its
service worker read (docs/decisions/045-shared-phone.md).

The session cookie is HttpOnly, so a page served from the device without a connection cannot
tell whether it is still signed in, nor as whom. Beside it the site keeps `tally_signed_in`,
readable by scripts: `<user id>.<session tag>`, set while a session is signed in and removed when
it is not, expiring with the session cookie. The session tag is a keyed hash of the session key:
it names the session (a page knows which one it was rendered for) and opens nothing. A page
rendered for another user, or for a session that is gone, neither shows tasks nor keeps answers.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.crypto import salted_hmac

COOKIE = "tally_signed_in"
_SALT = "accounts.device.session-tag"


def session_tag(session_key: str | None) -> str:
    """A short name of the session `session_key`, safe to show to scripts ("" for none)."""
    if not session_key:
        return ""
    return salted_hmac(_SALT, session_key, algorithm="sha256").hexdigest()[:20]


def signed_in_value(request: HttpRequest) -> str | None:
    """The cookie's value for this request's session: None when it is not signed in."""
    user = getattr(request, "user", None)
    session = getattr(request, "session", None)
    if user is None or not user.is_authenticated or session is None or not session.session_key:
        return None
    return f"{user.pk}.{session_tag(session.session_key)}"


class SignedInCookie:
    """Sets `tally_signed_in` on the way out whenever it is missing, stale or the session cookie
    is renewed, and deletes it from a browser that is signed out (by the sign-out form, the API,
    an expired session or the admin: every door goes through here). After the authentication
    middleware."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        value = signed_in_value(request)
        sent = request.COOKIES.get(COOKIE)
        if value is None:
            if sent is not None:
                response.delete_cookie(COOKIE, path="/", samesite="Lax")
            return response
        if sent != value or settings.SESSION_COOKIE_NAME in response.cookies:
            session = request.session
            response.set_cookie(
                COOKIE,
                value,
                max_age=None if session.get_expire_at_browser_close() else session.get_expiry_age(),
                path="/",
                secure=settings.SESSION_COOKIE_SECURE,
                httponly=False,  # read by the annotator page and its service worker
                samesite="Lax",
            )
        return response
