"""The accounts API: register, log in (a token for this device), log out, the tokens of one's
devices, password change and reset, who am I."""

from django.contrib.auth import get_user, logout, update_session_auth_hash
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from accounts import selectors as account_selectors
from accounts import services
from accounts.models import ApiToken
from accounts.signin import SigninThrottled
from accounts.throttles import PasswordResetThrottle, RegisterThrottle
from annotation import selectors
from common.api.base import ApiView, paginated
from common.api.errors import ErrorSerializer
from common.api.typed import TypedSerializer

_DEVICE_HELP = "What this token is for (a phone, a script), shown in the list of your tokens."


class CredentialsSerializer(TypedSerializer):
    username = serializers.RegexField(r"^[\w.@+-]+\Z", max_length=150)
    password = serializers.CharField(max_length=128, trim_whitespace=False)
    device = serializers.CharField(
        max_length=100, required=False, allow_blank=True, help_text=_DEVICE_HELP
    )


class RegisterSerializer(CredentialsSerializer):
    email = serializers.EmailField(
        required=False, allow_blank=True, help_text="Where a password reset is sent (optional)."
    )


class UserOut(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()


class TokenOut(serializers.Serializer):
    token = serializers.CharField(help_text="Send it as `Authorization: Token <token>`.")
    expires_at = serializers.DateTimeField(help_text="When it stops working: sign in again.")
    user = UserOut()


class MembershipOut(serializers.Serializer):
    project = serializers.IntegerField()
    project_name = serializers.CharField()
    role = serializers.CharField()


class MeOut(UserOut):
    email = serializers.CharField(help_text="Where a password reset is sent; blank: none.")
    memberships = MembershipOut(many=True)


class MeWriteSerializer(TypedSerializer):
    email = serializers.EmailField(allow_blank=True)
    password = serializers.CharField(
        max_length=128, trim_whitespace=False, help_text="Your password, to confirm."
    )


class LogoutSerializer(TypedSerializer):
    everywhere = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Revoke every token of yours and end every browser session you signed in with.",
    )


class ApiTokenOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField(help_text=_DEVICE_HELP)
    prefix = serializers.CharField(help_text="The key's first characters, to tell it.")
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    browser_session = serializers.BooleanField(
        help_text="Issued to a signed-in browser: revoked when that browser signs out."
    )
    current = serializers.BooleanField(help_text="The token this request was sent with.")


class PasswordChangeSerializer(TypedSerializer):
    old_password = serializers.CharField(max_length=128, trim_whitespace=False)
    new_password = serializers.CharField(max_length=128, trim_whitespace=False)


class PasswordResetSerializer(TypedSerializer):
    email = serializers.EmailField()


class PasswordResetConfirmSerializer(TypedSerializer):
    uid = serializers.CharField(max_length=64, help_text="From the link in the e-mail.")
    token = serializers.CharField(max_length=128, help_text="From the link in the e-mail.")
    new_password = serializers.CharField(max_length=128, trim_whitespace=False)


class MessageOut(serializers.Serializer):
    message = serializers.CharField()


def user_out(user) -> dict:
    return {"id": user.pk, "username": user.get_username()}


def _token_out(token: ApiToken) -> dict:
    return {"token": token.key, "expires_at": token.expires_at, "user": user_out(token.user)}


def _device(request, data: dict) -> str:
    return data.get("device") or request.headers.get("User-Agent", "")[:100]


def _session_key_of(request, user) -> str:
    """The key of the browser session the request comes with, if it is signed in as `user`."""
    django_request = request._request
    if not getattr(django_request, "session", None) or not django_request.session.session_key:
        return ""
    session_user = get_user(django_request)  # DRF set `request.user` from this view's classes
    if session_user.is_authenticated and session_user.pk == user.pk:
        return django_request.session.session_key
    return ""


class RegisterView(ApiView):
    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = [RegisterThrottle]

    @extend_schema(request=RegisterSerializer, responses={201: TokenOut})
    def post(self, request):
        data = RegisterSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        device = _device(request, fields)
        fields.pop("device", None)
        user = services.user_register(**fields)
        return Response(_token_out(services.token_issue(user=user, name=device)), status=201)


class LoginView(ApiView):
    """A new token for this device. Failed attempts spend the sign-in budget every door shares
    (accounts/signin.py)."""

    authentication_classes = []
    permission_classes = [AllowAny]

    @extend_schema(
        request=CredentialsSerializer,
        responses={
            200: TokenOut,
            429: OpenApiResponse(
                ErrorSerializer, description="Too many failed sign-ins: wait and try again."
            ),
        },
    )
    def post(self, request):
        data = CredentialsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        try:
            token = services.token_login(
                request=request,
                username=fields["username"],
                password=fields["password"],
                name=_device(request, fields),
            )
        except SigninThrottled as exc:
            raise exceptions.Throttled(wait=exc.wait, detail=str(exc)) from exc
        services.token_bind(token=token, session_key=_session_key_of(request, token.user))
        return Response(_token_out(token))


class LogoutView(ApiView):
    @extend_schema(request=LogoutSerializer, responses={204: None})
    def post(self, request):
        """Sign out: the token this request came with is revoked; a browser's session (a
        request with the session cookie) ends, with the tokens issued to it. `everywhere`:
        every token and every browser session of yours."""
        data = LogoutSerializer(data=request.data or {})
        data.is_valid(raise_exception=True)
        user = request.user
        if isinstance(request.auth, ApiToken):
            request.auth.delete()
        else:  # a browser's session
            logout(request._request)
        if data.validated_data["everywhere"]:
            services.sign_out_everywhere(user=user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TokenListView(ApiView):
    @extend_schema(responses={200: ApiTokenOut(many=True)})
    def get(self, request):
        """Your tokens that still work, newest first: one per device you signed in with."""
        current = request.auth.pk if isinstance(request.auth, ApiToken) else None
        return paginated(
            self,
            account_selectors.tokens_of_user(user=request.user),
            lambda token: account_selectors.token_out(token, current=current),
        )


class TokenDetailView(ApiView):
    @extend_schema(responses={204: None})
    def delete(self, request, token_id):
        """Revoke one of your tokens (the device it was for must sign in again)."""
        services.token_revoke(user=request.user, token_id=token_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PasswordChangeView(ApiView):
    @extend_schema(request=PasswordChangeSerializer, responses={204: None})
    def post(self, request):
        """Change your password: every other token of yours is revoked and every other browser
        session ends; the token (or session) this request came with goes on working."""
        data = PasswordChangeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.password_change(
            user=request.user,
            **data.validated_data,
            keep_token=request.auth if isinstance(request.auth, ApiToken) else None,
        )
        if not isinstance(request.auth, ApiToken):  # a browser's session: it stays signed in
            update_session_auth_hash(request._request, request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PasswordResetView(ApiView):
    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = [PasswordResetThrottle]

    @extend_schema(
        request=PasswordResetSerializer,
        responses={202: OpenApiResponse(MessageOut, description="Sent, if any account has it.")},
    )
    def post(self, request):
        """E-mail a link to set a new password to the accounts with this address. The answer is
        the same whether one has it or not."""
        data = PasswordResetSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.password_reset_send(email=data.validated_data["email"], request=request)
        message = "If an account has this address, a link to set a new password is on its way."
        return Response({"message": message}, status=status.HTTP_202_ACCEPTED)


class PasswordResetConfirmView(ApiView):
    authentication_classes = []
    permission_classes = [AllowAny]

    @extend_schema(request=PasswordResetConfirmSerializer, responses={204: None})
    def post(self, request):
        """Set a new password with the link's `uid` and `token`; every token of the account is
        revoked and every browser session ends. An expired or used link: `400 invalid`."""
        data = PasswordResetConfirmSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.password_reset_complete(**data.validated_data)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeView(ApiView):
    def _me(self, user) -> dict:
        memberships = [
            {"project": m.project_id, "project_name": m.project.name, "role": m.role}
            for m in selectors.memberships_of_user(user=user)
        ]
        return {**user_out(user), "email": user.email, "memberships": memberships}

    @extend_schema(responses={200: MeOut})
    def get(self, request):
        return Response(self._me(request.user))

    @extend_schema(request=MeWriteSerializer, responses={200: MeOut})
    def patch(self, request):
        """Set the address password resets are sent to (blank: none), with your password."""
        data = MeWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.email_change(user=request.user, **data.validated_data)
        return Response(self._me(request.user))
