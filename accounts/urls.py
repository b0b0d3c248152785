"""URLs of the accounts API, included under /api/ (see annotation/API.md, "Accounts")."""

from django.urls import path

from accounts import api

urlpatterns = [
    path("auth/register/", api.RegisterView.as_view(), name="register"),
    path("auth/login/", api.LoginView.as_view(), name="login"),
    path("auth/logout/", api.LogoutView.as_view(), name="logout"),
    path("auth/tokens/", api.TokenListView.as_view(), name="token-list"),
    path("auth/tokens/<id:token_id>/", api.TokenDetailView.as_view(), name="token-detail"),
    path("auth/password/", api.PasswordChangeView.as_view(), name="password-change"),
    path("auth/password/reset/", api.PasswordResetView.as_view(), name="password-reset"),
    path(
        "auth/password/reset/confirm/",
        api.PasswordResetConfirmView.as_view(),
        name="password-reset-confirm",
    ),
    path("me/", api.MeView.as_view(), name="me"),
]
