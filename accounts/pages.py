"""The account's pages: its tokens and e-mail address, password change, and password reset by
e-mail (Django's views and forms, with the same services as the API)."""

from __future__ import annotations

import contextlib

from django import forms
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts import selectors, services
from accounts.throttles import PasswordResetThrottle
from common.exceptions import DomainError, NotFound


class EmailForm(forms.Form):
    email = forms.EmailField(required=False, label="E-mail address (for password resets)")
    password = forms.CharField(
        strip=False,
        label="Your password, to confirm",
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def account(request: HttpRequest) -> HttpResponse:
    """Your tokens (revoke any), your e-mail address, and links to change the password."""
    form = EmailForm(request.POST or None, initial={"email": request.user.email})
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                services.email_change(user=request.user, **form.cleaned_data)
                return redirect(f"{reverse_lazy('account:home')}?saved=1")
            except DomainError as exc:
                form.add_error("password", exc.message)
        status = 400
    context = {
        "form": form,
        "tokens": [
            selectors.token_out(token, current=None)
            for token in selectors.tokens_of_user(user=request.user)
        ],
        "saved": request.GET.get("saved") == "1",
        "revoked": request.GET.get("revoked") == "1",
    }
    return render(request, "accounts/account.html", context, status=status)


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    # Revoked already (two clicks, two tabs): the page shows what is left.
    with contextlib.suppress(NotFound):
        services.token_revoke(user=request.user, token_id=token_id)
    return redirect(f"{reverse_lazy('account:home')}?revoked=1")


@login_required
@require_POST
def sign_out_everywhere(request: HttpRequest) -> HttpResponse:
    """Every token revoked and every browser session ended, this one too."""
    services.sign_out_everywhere(user=request.user)
    return redirect("frontend:login")


class PasswordChangeView(auth_views.PasswordChangeView):
    """Django's form (current password, new one twice, the password validators); every token
    is revoked and every other browser session ends (this one is kept)."""

    http_method_names = ["get", "post"]

    template_name = "accounts/password_change.html"
    success_url = reverse_lazy("account:password-changed")

    def form_valid(self, form):
        response = super().form_valid(form)
        services.tokens_revoke(user=form.user)
        return response


class PasswordChangedView(auth_views.PasswordChangeDoneView):
    http_method_names = ["get"]
    template_name = "accounts/password_changed.html"


class PasswordResetView(auth_views.PasswordResetView):
    """Ask for a reset link by e-mail: the same answer whether an account has the address or
    not, and at most `TALLY_PASSWORD_RESET_RATE` asks per client address."""

    http_method_names = ["get", "post"]

    template_name = "accounts/password_reset.html"
    success_url = reverse_lazy("account:password-reset-sent")

    def form_valid(self, form):
        throttle = PasswordResetThrottle()
        if not throttle.allow_request(self.request, None):
            wait = int(throttle.wait() or 60) + 1
            form.add_error(None, f"Too many requests. Try again in {wait} seconds.")
            response = self.form_invalid(form)
            response.status_code = 429
            return response
        services.password_reset_send(email=form.cleaned_data["email"], request=self.request)
        return redirect(self.success_url)


class PasswordResetSentView(auth_views.PasswordResetDoneView):
    http_method_names = ["get"]
    template_name = "accounts/password_reset_sent.html"


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    """The link from the e-mail: choose a new password. Every token of the account is revoked
    and every browser session ends."""

    http_method_names = ["get", "post"]

    template_name = "accounts/password_reset_confirm.html"
    success_url = reverse_lazy("account:password-reset-complete")

    def form_valid(self, form):
        response = super().form_valid(form)
        services.sign_out_everywhere(user=form.user)
        return response


class PasswordResetCompleteView(auth_views.PasswordResetCompleteView):
    http_method_names = ["get"]
    template_name = "accounts/password_reset_complete.html"
