"""The back-office groups: compliance, support, operations, administrator.
Their permissions are assigned after every migrate by
`bankapi.backoffice.groups_sync`, so models added later are covered."""

from django.db import migrations

GROUPS = ("compliance", "support", "operations", "administrator")


def create_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in GROUPS:
        Group.objects.using(schema_editor.connection.alias).get_or_create(name=name)


def delete_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.using(schema_editor.connection.alias).filter(name__in=GROUPS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("bankapi", "0001_initial"),
    ]

    operations = [migrations.RunPython(create_groups, delete_groups)]
