from django.apps import AppConfig


class KernelIndexConfig(AppConfig):
    name = "kernelindex"
    verbose_name = "KernelIndex"
