"""The account's pages, under /account/ (accounts/pages.py)."""

from django.urls import path

from accounts import pages

app_name = "account"

urlpatterns = [
    path("", pages.account, name="home"),
    path("tokens/<id:token_id>/revoke/", pages.token_revoke, name="token-revoke"),
    path("sign-out-everywhere/", pages.sign_out_everywhere, name="sign-out-everywhere"),
    path("password/", pages.PasswordChangeView.as_view(), name="password-change"),
    path("password/changed/", pages.PasswordChangedView.as_view(), name="password-changed"),
    path("reset/", pages.PasswordResetView.as_view(), name="password-reset"),
    path("reset/sent/", pages.PasswordResetSentView.as_view(), name="password-reset-sent"),
    path(
        "reset/<uidb64>/<token>/",
        pages.PasswordResetConfirmView.as_view(),
        name="password-reset-confirm",
    ),
    path("reset/done/", pages.PasswordResetCompleteView.as_view(), name="password-reset-complete"),
]
