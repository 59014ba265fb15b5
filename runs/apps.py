from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
    verbose_name = "Runs and their records"

    def ready(self) -> None:
        from kernelindex.lookups import InlinedExact
        from runs.models import Run

        # The published runs' partial indexes name visibility (runs.ordering.newest_first_index);
        # the rare status and evidence indexes name those (migration 0018).
        for name in ("visibility", "status", "evidence_level"):
            Run._meta.get_field(name).register_lookup(InlinedExact, "exact")
