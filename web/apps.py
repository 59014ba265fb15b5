from django.apps import AppConfig


class WebConfig(AppConfig):
    """The server-rendered pages: views, URLs, charts, template tags, and the page selectors
    that combine runs with community data. No models."""

    name = "web"
    verbose_name = "Pages"
