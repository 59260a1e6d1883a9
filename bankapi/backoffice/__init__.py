"""Back-office roles: the admin groups and the permissions each one holds.

The groups are created by a migration (bankapi 0002). Their permissions are
(re)assigned after every `migrate` by `groups_sync` (a post_migrate handler), so a
model or a permission that lands later is covered without a new migration. The
assignment only adds: a permission an administrator granted by hand is kept.

Permissions are named by "app_label.codename" strings, so the kernel imports no
domain app; a name whose model is not installed yet is skipped until it is.

The operator actions of apps still changing fast (onboarding, batches, cards) get
their permissions from `ACTION_PERMISSIONS`, made here after migrate, rather than
from their models' Meta: a Meta change is a migration in the domain's own app,
racing its engineer's next one.
"""

from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db.models import Q

COMPLIANCE = "compliance"
SUPPORT = "support"
OPERATIONS = "operations"
ADMINISTRATOR = "administrator"
GROUPS = (COMPLIANCE, SUPPORT, OPERATIONS, ADMINISTRATOR)

# On top of viewing every record of the project's apps (all groups may look).
GROUP_PERMISSIONS: dict[str, tuple[str, ...]] = {
    COMPLIANCE: (
        # The admin log: what every operator did, and why.
        "admin.view_logentry",
        "payments.review_paymentrequest",
        "onboarding.review_application",
        "onboarding.reset_ubo",
    ),
    SUPPORT: (
        "authn.reset_password_user",
        "authn.unlock_user",
    ),
    OPERATIONS: (
        "payments.add_fxrate",
        "payments.change_fxrate",
        "payments.drive_sandbox_paymentrequest",
        "payments.return_paymentrequest",
        "batches.retry_batchitem",
        "cards.issue_card",
        "onboarding.add_verificationstep",
        "onboarding.change_verificationstep",
        "onboarding.delete_verificationstep",
    ),
}

# (app_label, model) -> [(codename, name)]: permissions of operator actions.
ACTION_PERMISSIONS: dict[tuple[str, str], list[tuple[str, str]]] = {
    ("onboarding", "application"): [
        ("review_application", "Can move applications through their workflow stages")
    ],
    ("onboarding", "ubo"): [("reset_ubo", "Can reset a UBO's verification")],
    ("batches", "batchitem"): [("retry_batchitem", "Can retry a failed batch item")],
    ("cards", "card"): [("issue_card", "Can issue cards")],
}


def project_app_labels() -> list[str]:
    """The apps of this project (top-level packages beside manage.py)."""
    base = Path(settings.BASE_DIR).resolve()
    return [config.label for config in apps.get_app_configs() if Path(config.path).resolve().parent == base]


def group_permissions(name: str):
    """The permissions the named group should hold now."""
    if name == ADMINISTRATOR:
        return Permission.objects.all()
    named = Q(pk__in=[])
    for dotted in GROUP_PERMISSIONS[name]:
        app_label, codename = dotted.split(".", 1)
        named |= Q(content_type__app_label=app_label, codename=codename)
    viewing = Q(content_type__app_label__in=project_app_labels(), codename__startswith="view_")
    return Permission.objects.filter(named | viewing)


def action_permissions_sync(*, using: str = "default") -> None:
    """Create the ACTION_PERMISSIONS of every installed model."""
    for (app_label, model_name), permissions in ACTION_PERMISSIONS.items():
        try:
            model = apps.get_model(app_label, model_name)
        except LookupError:
            continue
        content_type = ContentType.objects.db_manager(using).get_for_model(model, for_concrete_model=False)
        for codename, name in permissions:
            Permission.objects.using(using).get_or_create(
                content_type=content_type, codename=codename, defaults={"name": name}
            )


def groups_sync(*, using: str = "default") -> None:
    """Make sure each group exists and holds its permissions."""
    action_permissions_sync(using=using)
    for name in GROUPS:
        group, _ = Group.objects.using(using).get_or_create(name=name)
        group.permissions.add(*group_permissions(name).using(using).values_list("pk", flat=True))


def groups_sync_after_migrate(sender, *, using: str = "default", **kwargs) -> None:
    """post_migrate handler. The signal comes once per app, after that app's
    permissions are made; the last app's signal sees them all."""
    with_models = [config for config in apps.get_app_configs() if config.models_module is not None]
    if with_models and sender is with_models[-1]:
        groups_sync(using=using)
