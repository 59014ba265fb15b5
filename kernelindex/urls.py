from collections.abc import Callable

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import urls as auth_urls
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import URLPattern, include, path

# Password reset mails a link: without a mail server (PASSWORD_RESET off) its pages are 404s.
PASSWORD_RESET_URL_NAMES = {
    "password_reset",
    "password_reset_done",
    "password_reset_confirm",
    "password_reset_complete",
}


def _when_password_reset_enabled(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    def wrapped(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponseBase:
        if not settings.PASSWORD_RESET_ENABLED:
            raise Http404("Password reset is turned off.")
        return view(request, *args, **kwargs)

    return wrapped


def _account_urls() -> list[URLPattern]:
    patterns = []
    for pattern in auth_urls.urlpatterns:
        if pattern.name in PASSWORD_RESET_URL_NAMES:
            pattern = path(str(pattern.pattern), _when_password_reset_enabled(pattern.callback), name=pattern.name)
        patterns.append(pattern)
    return patterns


def healthz(request: HttpRequest) -> HttpResponse:
    """The trivial view: no database, no template. bench/pages.py measures every page against it."""
    return HttpResponse("ok", content_type="text/plain")


def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    """Browsers ask for /favicon.ico whatever the page names; send them to the icon base.html names.

    Resolved per request: with the manifest storage the hashed name exists only after collectstatic.
    """
    return HttpResponsePermanentRedirect(static("kernelindex/favicon.svg"))


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("api/", include("api.urls")),
    path("accounts/", include(_account_urls())),
    path("", include("attestations.urls")),
    path("", include("web.urls")),
]
