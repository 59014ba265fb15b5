from django.urls import path, re_path, register_converter

from kernelindex.links import NATIVE_ID_PATTERN
from web import browse_views, views


class NativeIdConverter:
    """A benchmark's native id: only the safe set of ``kernelindex.links`` (no dot segments),
    both when a URL is matched and when one is reversed."""

    regex = NATIVE_ID_PATTERN

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(NativeIdConverter, "native_id")

app_name = "runs"

# Public ids are lowercase hex (8 characters, longer after a collision).
RUN = r"(?P<public_id>[0-9a-f]{8,64})"

urlpatterns = [
    path("", views.home, name="home"),
    path("search/", views.search, name="search"),
    re_path(rf"^runs/{RUN}/$", views.run_detail, name="run_detail"),
    re_path(rf"^runs/{RUN}\.json$", views.run_json, name="run_json"),
    re_path(rf"^runs/{RUN}/compare/$", views.compare, name="run_compare"),
    re_path(rf"^runs/{RUN}/compare/(?P<other_id>[0-9a-f]{{8,64}})/$", views.compare, name="run_compare_with"),
    re_path(rf"^runs/{RUN}/cite/$", views.cite, name="run_cite"),
    re_path(r"^groups/(?P<key>sha256:[0-9a-f]{64})/$", views.group_detail, name="group_detail"),
    path("runs/", browse_views.runs_index, name="run_list"),
    path("benchmarks/", browse_views.benchmarks_index, name="benchmark_list"),
    # Before benchmark_detail: native ids contain "/" (KernelBench "level1/1_Square_matrix…").
    path("benchmarks/<slug:source>/<native_id:native_id>/gpus/", browse_views.benchmark_gpus, name="benchmark_gpus"),
    path("benchmarks/<slug:source>/<native_id:native_id>/", views.benchmark_detail, name="benchmark_detail"),
    path("gpus/", browse_views.gpus_index, name="gpu_list"),
    path("gpus/<slug:slug>/", browse_views.gpu_detail, name="gpu_detail"),
    path("sources/", browse_views.sources_index, name="source_list"),
    path("projects/", browse_views.projects_index, name="project_list"),
    path("sources/<slug:slug>/", views.source_detail, name="source_detail"),
    path("projects/<slug:slug>/", views.project_detail, name="project_detail"),
    re_path(r"^environments/(?P<digest>sha256:[0-9a-f]{64})/$", views.environment_detail, name="environment_detail"),
]
