from django.apps import AppConfig


class KernelIndexConfig(AppConfig):
    name = "kernelindex"
    verbose_name = "KernelIndex"

    def ready(self) -> None:
        from django.db.models import Field, ForeignObject

        from kernelindex.lookups import AnyOf

        # A foreign key's lookups are its own (ForeignObject's), not Field's: register on both.
        Field.register_lookup(AnyOf)
        ForeignObject.register_lookup(AnyOf)
