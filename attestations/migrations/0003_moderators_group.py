"""The `moderators` group, with only what moderation needs: view runs, attestations, reports
and the moderation log; change (= act on) runs, attestations and reports. No add, no delete.
Members also need `is_staff` to enter the admin."""

from django.db import migrations

MODERATOR_PERMISSIONS = [
    ("runs", "view_run"),
    ("runs", "change_run"),
    ("attestations", "view_attestation"),
    ("attestations", "change_attestation"),
    ("attestations", "view_issuereport"),
    ("attestations", "change_issuereport"),
    ("attestations", "view_moderationevent"),
]


def create_moderators(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    # Permissions are normally created after `migrate` finishes; create them now so a fresh
    # database gets a complete group.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0, using=schema_editor.connection.alias)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.using(schema_editor.connection.alias).get_or_create(name="moderators")
    permissions = []
    for app_label, codename in MODERATOR_PERMISSIONS:
        permissions.append(
            Permission.objects.using(schema_editor.connection.alias).get(
                content_type__app_label=app_label, codename=codename
            )
        )
    group.permissions.set(permissions)


def remove_moderators(apps, schema_editor):
    apps.get_model("auth", "Group").objects.using(schema_editor.connection.alias).filter(name="moderators").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("attestations", "0002_moderation_fields"),
        ("runs", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_moderators, remove_moderators)]
