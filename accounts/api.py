"""The accounts API: register, log in (token), log out, who am I."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from accounts import services
from accounts.signin import SigninThrottled
from accounts.throttles import RegisterThrottle
from annotation import selectors
from common.api.base import ApiView
from common.api.errors import ErrorSerializer
from common.api.typed import TypedSerializer


class CredentialsSerializer(TypedSerializer):
    username = serializers.RegexField(r"^[\w.@+-]+\Z", max_length=150)
    password = serializers.CharField(max_length=128, trim_whitespace=False)


class UserOut(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()


class TokenOut(serializers.Serializer):
    token = serializers.CharField(help_text="Send it as `Authorization: Token <token>`.")
    user = UserOut()


class MembershipOut(serializers.Serializer):
    project = serializers.IntegerField()
    project_name = serializers.CharField()
    role = serializers.CharField()


class MeOut(UserOut):
    memberships = MembershipOut(many=True)


def user_out(user) -> dict:
    return {"id": user.pk, "username": user.get_username()}


class RegisterView(ApiView):
    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = [RegisterThrottle]

    @extend_schema(request=CredentialsSerializer, responses={201: TokenOut})
    def post(self, request):
        data = CredentialsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user, token = services.user_register(**data.validated_data)
        return Response({"token": token.key, "user": user_out(user)}, status=201)


class LoginView(ApiView):
    """Failed attempts spend the sign-in budget every door shares (accounts/signin.py)."""

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
        try:
            token = services.token_login(request=request, **data.validated_data)
        except SigninThrottled as exc:
            raise exceptions.Throttled(wait=exc.wait, detail=str(exc)) from exc
        return Response({"token": token.key, "user": user_out(token.user)})


class LogoutView(ApiView):
    @extend_schema(request=None, responses={204: None})
    def post(self, request):
        services.token_logout(user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeView(ApiView):
    @extend_schema(responses={200: MeOut})
    def get(self, request):
        memberships = [
            {"project": m.project_id, "project_name": m.project.name, "role": m.role}
            for m in selectors.memberships_of_user(user=request.user)
        ]
        return Response({**user_out(request.user), "memberships": memberships})
