from django.urls import path

from runs import views

app_name = "runs"

urlpatterns = [
    path("", views.home, name="home"),
]
