"""Moderators may request reruns (and see the queue): the `moderators` group gets
api.add_rerunrequest and api.view_rerunrequest."""

from django.db import migrations

PERMISSIONS = ["add_rerunrequest", "view_rerunrequest"]


def grant(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    alias = schema_editor.connection.alias
    # Permissions are normally created after `migrate` finishes; create them now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0, using=alias)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.using(alias).get_or_create(name="moderators")
    group.permissions.add(
        *Permission.objects.using(alias).filter(content_type__app_label="api", codename__in=PERMISSIONS)
    )


def revoke(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    alias = schema_editor.connection.alias
    for group in Group.objects.using(alias).filter(name="moderators"):
        group.permissions.remove(
            *Permission.objects.using(alias).filter(content_type__app_label="api", codename__in=PERMISSIONS)
        )


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0002_rerun_requests"),
        ("attestations", "0003_moderators_group"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
