"""URLs of the accounts API, included under /api/ (see annotation/API.md, "Accounts")."""

from django.urls import path

from accounts import api

urlpatterns = [
    path("auth/register/", api.RegisterView.as_view(), name="register"),
    path("auth/login/", api.LoginView.as_view(), name="login"),
    path("auth/logout/", api.LogoutView.as_view(), name="logout"),
    path("me/", api.MeView.as_view(), name="me"),
]
