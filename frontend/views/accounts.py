"""Sign in, sign out, sign up, and joining a project by its invite code."""

from django import forms
from django.contrib.auth import login
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView, LogoutView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.http import require_http_methods

from accounts import services
from accounts.backends import throttled
from accounts.forms import SigninForm
from annotation import selectors
from common.exceptions import InvalidInput
from frontend.throttle import signup_allowed


def _safe_next(request: HttpRequest, default: str = "/") -> str:
    """Where to go after signing up: `next` if it is a path on this site, else `default`. Only
    paths: `redirect()` would take any other word for the name of a URL pattern."""
    target = request.POST.get("next") or request.GET.get("next") or default
    if target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


class TallyLoginView(LoginView):
    """Django's sign-in form; failed attempts spend the budget every sign-in door shares
    (accounts/signin.py), and a refused attempt is a 429."""

    template_name = "frontend/login.html"
    redirect_authenticated_user = True
    form_class = SigninForm

    def get_redirect_url(self) -> str:
        # Django's check lets a bare word through as a URL relative to /login/.
        url = super().get_redirect_url()
        return url if url.startswith("/") else ""

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if throttled(self.request) is not None:
            response.status_code = 429
        return response


class TallyLogoutView(LogoutView):
    """Sign out, and have the browser forget what this site kept on the device: its HTTP cache,
    and its storage (the annotator page's held tasks and outbox, the service worker and its
    copies of the pages), so that the next person to use the phone finds nothing of the last
    annotator's (docs/decisions/045-shared-phone.md).

    The sign-out form's script (signout.js) sends the outbox first, while still signed in. When
    some answers could not be sent it clears the rest itself and says `outbox=kept`: the storage
    is then left alone, those answers bound to their annotator (the server takes them from no
    one else)."""

    next_page = "/login/"

    def post(self, request, *args, **kwargs):
        kept = request.POST.get("outbox") == "kept"
        response = super().post(request, *args, **kwargs)
        response["Clear-Site-Data"] = '"cache"' if kept else '"cache", "storage"'
        return response


class SignupForm(forms.Form):
    username = forms.RegexField(
        regex=r"^[\w.@+-]+\Z",
        max_length=150,
        error_messages={"invalid": "Letters, digits and @ . + - _ only."},
        widget=forms.TextInput(attrs={"autocomplete": "username", "autocapitalize": "none"}),
    )
    password = forms.CharField(
        max_length=128,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )


def _register(request: HttpRequest, form: SignupForm) -> int:
    """Create the account `form` holds (the same service as `POST /api/auth/register/`) and sign
    in. Returns the page's status: 200 once signed in, else 400 or 429 with the form's errors."""
    allowed, wait = signup_allowed(request)
    if not allowed:
        form.add_error(None, f"Too many attempts. Try again in {int(wait or 60) + 1} seconds.")
        return 429
    if not form.is_valid():
        return 400
    try:
        user = services.user_register(**form.cleaned_data)
    except InvalidInput as exc:
        for field, messages in (exc.fields or {"__all__": [exc.message]}).items():
            for message in messages:
                form.add_error(field if field in form.fields else None, message)
        return 400
    login(request, user, backend="accounts.backends.ThrottledModelBackend")
    return 200


@never_cache
@csrf_protect
@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """Create an account and sign in, then on to `next`."""
    next_url = _safe_next(request)
    if request.user.is_authenticated:
        return redirect(next_url)
    form = SignupForm(request.POST or None)
    status = 200
    if request.method == "POST":
        status = _register(request, form)
        if status == 200:
            return redirect(next_url)
    return render(request, "frontend/signup.html", {"form": form, "next": next_url}, status=status)


@never_cache
@csrf_protect
@require_http_methods(["GET", "POST"])
def join(request: HttpRequest, code: str) -> HttpResponse:
    """An invite link. The code is checked first: an unknown (or rotated) code says so before
    anyone signs up. Signed out: sign in, or sign up here (a refused password comes back to this
    page, the invite kept). Signed in: the page's script joins through `POST /api/join/` and
    moves on to the annotator page."""
    project = selectors.invite_project(code=code[:64])
    signup_form = SignupForm()
    status = 200 if project is not None else 404
    if request.method == "POST":
        if request.user.is_authenticated or project is None:
            return redirect("frontend:join", code=code)
        signup_form = SignupForm(request.POST)
        status = _register(request, signup_form)
        if status == 200:
            return redirect("frontend:join", code=code)
    return render(
        request,
        "frontend/join.html",
        {
            "code": code,
            "project": project,
            "archived": project is not None and project.status == project.Status.ARCHIVED,
            "private": selectors.invite_privacy(project=project),
            "login_form": AuthenticationForm(request),
            "form": signup_form,
        },
        status=status,
    )


@require_http_methods(["GET"])
def join_form(request: HttpRequest) -> HttpResponse:
    """The "join with a code" box on the home page: on to the invite link of that code."""
    code = request.GET.get("code", "").strip()
    if not code or "/" in code:
        return redirect("frontend:home")
    return redirect("frontend:join", code=code)
