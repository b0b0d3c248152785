from django.contrib import admin
from django.urls import include, path, register_converter

from accounts.forms import AdminSigninForm
from common.api.docs import DocsView, SchemaView
from config.converters import IdConverter
from config.health import healthz

register_converter(IdConverter, "id")  # before the apps' URLconfs below use `<id:...>`
# The admin's sign-in says so when the shared sign-in throttle refused (accounts/signin.py).
admin.site.login_form = AdminSigninForm

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/", include("annotation.urls")),  # first: the annotator's cycle
    path("api/", include("accounts.urls")),
    path("api/", include("learning.urls")),
    path("api/", include("delivery.urls")),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    path("api/docs/", DocsView.as_view(url_name="schema"), name="api-docs"),
    path("account/", include("accounts.page_urls")),
    path("", include("frontend.urls")),
]

handler400 = "config.errors.bad_request"
handler404 = "config.errors.not_found"
handler500 = "config.errors.server_error"
