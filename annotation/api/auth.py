"""Accounts: register, log in (token), log out, who am I."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from annotation import selectors, services
from annotation.api.base import ApiView
from annotation.api.serializers import CredentialsSerializer, user_out
from annotation.throttles import LoginThrottle, LoginUsernameThrottle


class RegisterView(ApiView):
    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginThrottle]

    @extend_schema(request=CredentialsSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request):
        data = CredentialsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user, token = services.user_register(**data.validated_data)
        return Response({"token": token.key, "user": user_out(user)}, status=201)


class LoginView(ApiView):
    authentication_classes = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginThrottle, LoginUsernameThrottle]

    @extend_schema(request=CredentialsSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request):
        data = CredentialsSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        token = services.token_login(request=request, **data.validated_data)
        return Response({"token": token.key, "user": user_out(token.user)})


class LogoutView(ApiView):
    @extend_schema(request=None, responses={204: None})
    def post(self, request):
        services.token_logout(user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeView(ApiView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        memberships = [
            {"project": m.project_id, "project_name": m.project.name, "role": m.role}
            for m in selectors.memberships_of_user(user=request.user)
        ]
        return Response({**user_out(request.user), "memberships": memberships})
