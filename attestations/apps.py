from django.apps import AppConfig


class AttestationsConfig(AppConfig):
    name = "attestations"
    verbose_name = "Attestations, reports and moderation"
