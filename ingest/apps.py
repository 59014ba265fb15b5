from django.apps import AppConfig


class IngestConfig(AppConfig):
    """Formats, the import engine and the pipeline that ``manage.py import``, the API and the
    bench share. No models: everything it writes belongs to ``runs``."""

    name = "ingest"
    verbose_name = "Import"
