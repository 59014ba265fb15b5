from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from runs.models import Benchmark, Run


def home(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "runs/home.html",
        {
            "benchmarks": Benchmark.objects.for_listing()[:50],
            "latest_runs": Run.objects.visible().for_listing().order_by("-observed_at")[:25],
        },
    )
