from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def healthz(request: HttpRequest) -> HttpResponse:
    """The trivial view: no database, no template. bench/pages.py measures every page against it."""
    return HttpResponse("ok", content_type="text/plain")


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/", include("api.urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("attestations.urls")),
    path("", include("web.urls")),
]
