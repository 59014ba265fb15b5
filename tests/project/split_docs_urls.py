"""The site's URLconf with the API docs served by drf-spectacular's split view (for
tests/project/test_headers.py)."""

from django.urls import path
from drf_spectacular.views import SpectacularSwaggerSplitView

from kernelindex.urls import urlpatterns as site_urlpatterns

urlpatterns = [
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="split-docs"),
    *site_urlpatterns,
]
