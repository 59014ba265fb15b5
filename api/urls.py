"""/api/: the versioned API, its OpenAPI schema and the offline docs pages."""

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework.routers import SimpleRouter

from api import rerun_views, views
from api.exceptions import not_found

app_name = "api"

router = SimpleRouter()
router.register("runs", views.RunViewSet, basename="run")
router.register("groups", views.GroupViewSet, basename="group")
router.register("benchmarks", views.BenchmarkViewSet, basename="benchmark")
router.register("sources", views.SourceViewSet, basename="source")
router.register("protocols", views.ProtocolViewSet, basename="protocol")
router.register("environments", views.EnvironmentViewSet, basename="environment")
router.register("workloads", views.WorkloadViewSet, basename="workload")
router.register("implementations", views.ImplementationViewSet, basename="implementation")
router.register("attestations", views.AttestationViewSet, basename="attestation")

v1 = [
    path("", views.ApiRootView.as_view(), name="root"),
    path("manifests/", views.ManifestView.as_view(), name="manifests"),
    path("reruns/", rerun_views.RerunRequestView.as_view(), name="reruns"),
    path("reruns/claim/", rerun_views.RerunClaimView.as_view(), name="rerun-claim"),
    path("reruns/<str:id>/finish/", rerun_views.RerunFinishView.as_view(), name="rerun-finish"),
    path("runs/<str:id>/attestations/", views.AttestationCreateView.as_view(), name="run-attestations"),
    path("runs/<str:id>/reports/", views.ReportCreateView.as_view(), name="run-reports"),
    *router.urls,
]

urlpatterns = [
    path("v1/", include(v1)),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api:schema"), name="redoc"),
    # Anything else under /api/ is a JSON 404, not the site's HTML page.
    re_path(r"^.*$", not_found),
]
