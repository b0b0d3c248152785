"""Pages of Tally: sign-in, joining by invite, the annotator page and the manager dashboard.

The pages are server-rendered shells; their JavaScript talks to the REST APIs under /api/.
"""

from django.urls import path

from frontend.views import accounts, pages

app_name = "frontend"

urlpatterns = [
    path("", pages.home, name="home"),
    path("login/", accounts.TallyLoginView.as_view(), name="login"),
    path("logout/", accounts.TallyLogoutView.as_view(), name="logout"),
    path("signup/", accounts.signup, name="signup"),
    path("join/", accounts.join_form, name="join-form"),
    path("join/<str:code>", accounts.join, name="join"),
    path("annotate/<id:project_id>/", pages.annotate, name="annotate"),
    path("annotate/worker.js", pages.annotate_worker, name="annotate-worker"),
    path("projects/new/", pages.project_new, name="project-new"),
    path("projects/<id:project_id>/", pages.project_detail, name="project-detail"),
]
