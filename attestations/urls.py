from django.urls import re_path

from attestations import views

app_name = "attestations"

# Public ids are lowercase hex (8 characters, longer after a collision), as in web/urls.py.
RUN = r"(?P<public_id>[0-9a-f]{8,64})"

urlpatterns = [
    re_path(rf"^runs/{RUN}/attest/$", views.attest, name="attest"),
    re_path(
        rf"^runs/{RUN}/attest/received/(?P<reference>A-[0-9a-f]{{10}})/$",
        views.attest_received,
        name="attest_received",
    ),
    re_path(rf"^runs/{RUN}/report/$", views.report, name="report"),
    re_path(
        rf"^runs/{RUN}/report/received/(?P<reference>R-[0-9a-f]{{10}})/$",
        views.report_received,
        name="report_received",
    ),
]
