"""The back-office groups and what each one may do."""

from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command

from authn.models import User
from bankapi.backoffice import GROUPS, groups_sync


def _perms(name: str) -> set[str]:
    group = Group.objects.get(name=name)
    return {
        f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.select_related("content_type")
    }


def test_the_four_groups_exist_with_their_permissions(db):
    assert set(Group.objects.filter(name__in=GROUPS).values_list("name", flat=True)) == set(GROUPS)
    compliance, support, operations = _perms("compliance"), _perms("support"), _perms("operations")

    assert {
        "payments.review_paymentrequest",
        "onboarding.review_application",
        "admin.view_logentry",
    } <= compliance
    assert {"onboarding.change_verificationstep", "batches.retry_batchitem", "cards.issue_card"} <= operations
    assert {"authn.reset_password_user", "authn.unlock_user"} <= support
    assert {"payments.change_fxrate", "payments.drive_sandbox_paymentrequest"} <= operations
    # Everyone may look; nobody but administrators may change users or review holds.
    for perms in (compliance, support, operations):
        assert {"payments.view_paymentrequest", "authn.view_user", "bankapi.view_account"} <= perms
        assert "authn.change_user" not in perms and "bankapi.change_program" not in perms
    assert "payments.review_paymentrequest" not in support | operations
    assert "authn.reset_password_user" not in compliance | operations
    assert _perms("administrator") == {
        f"{app}.{codename}"
        for app, codename in Permission.objects.values_list("content_type__app_label", "codename")
    }


def test_a_permission_added_later_reaches_the_groups_on_the_next_migrate(db):
    content_type = ContentType.objects.get(app_label="payments", model="paymentrequest")
    Permission.objects.create(content_type=content_type, codename="view_late", name="Can view late")

    call_command("migrate", verbosity=0)

    assert "payments.view_late" in _perms("administrator")
    assert "payments.view_late" in _perms("support")


def test_sync_keeps_what_an_administrator_granted_by_hand(db):
    extra = Permission.objects.get(codename="change_program")
    Group.objects.get(name="support").permissions.add(extra)

    groups_sync()

    assert "bankapi.change_program" in _perms("support")


def test_the_bootstrap_operator_is_staff_in_administrator(sandbox):
    operator = User.objects.get(email=sandbox["operator"]["email"], program=None)
    assert operator.is_staff and not operator.is_superuser
    assert list(operator.groups.values_list("name", flat=True)) == ["administrator"]
