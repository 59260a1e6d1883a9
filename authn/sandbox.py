"""`bootstrap_sandbox`, authentication part: the sandbox users and their secrets."""

import pyotp
from django.contrib.auth.models import Group, Permission

from authn.models import User
from bankapi.models import Customer, Program
from bankapi.roles import Role
from bankapi.sandbox import SandboxContext, new_password

DOMAIN = "sandbox.example"
ADMINISTRATOR_GROUP = "administrator"


def _user(
    ctx: SandboxContext,
    path: str,
    email: str,
    *,
    program: Program | None,
    password_key: str = "password",
    totp: bool = False,
    **fields,
) -> dict:
    password = ctx.remembered(f"{path}.{password_key}", new_password)
    user = User.objects.filter(email=email, program=program).first()
    if user is None:
        user = User(email=email, program=program, sandbox=True, **fields)
        user.set_password(password)
        if totp:
            user.totp_secret = ctx.remembered(f"{path}.totpSecret", pyotp.random_base32)
            user.totp_confirmed = True
        user.save()
    elif not user.check_password(password):
        # The manifest was lost but the user kept: print a password that works.
        user.set_password(password)
        user.save(update_fields=["password"])
    out = {"email": email, password_key: password}
    if totp:
        out["totpSecret"] = user.totp_secret
    return out


def _own_customer(program: Program, name: str) -> Customer:
    customer, _ = Customer.objects.get_or_create(program=program, sandbox=True, name=name)
    return customer


def bootstrap(ctx: SandboxContext) -> None:
    consumer = ctx.objects["consumer_program"]
    for key, number in (("customer", 1), ("customer2", 2), ("business", 3)):
        customer = ctx.objects[key]
        creds = _user(
            ctx,
            key,
            f"customer{number}@{DOMAIN}",
            program=customer.program,
            totp=True,
            role=Role.CUSTOMER,
            customer=customer,
        )
        ctx.output[key] = {**creds, **ctx.output[key]}

    custodian = ctx.objects["custodian"]
    ctx.output["custodian"] = {
        **_user(
            ctx,
            "custodian",
            f"custodian@{DOMAIN}",
            program=consumer,
            totp=True,
            role=Role.CUSTODIAN,
            custodian=custodian,
        ),
        **ctx.output["custodian"],
    }
    ctx.output["management"] = _user(
        ctx,
        "management",
        f"management@{DOMAIN}",
        program=None,
        totp=True,
        role=Role.MANAGEMENT,
    )
    new_user = _user(
        ctx,
        "newUser",
        f"new.user@{DOMAIN}",
        program=consumer,
        password_key="temporaryPassword",
        role=Role.CUSTOMER,
        must_change_password=True,
        customer=_own_customer(consumer, "Sandbox New User"),
    )
    ctx.output["newUser"] = {**new_user, "programId": str(consumer.id)}
    passkey_user = _user(
        ctx,
        "passkeyUser",
        f"passkey.user@{DOMAIN}",
        program=consumer,
        role=Role.CUSTOMER,
        customer=_own_customer(consumer, "Sandbox Passkey User"),
    )
    ctx.output["passkeyUser"] = {**passkey_user, "programId": str(consumer.id)}
    spare_user = _user(
        ctx,
        "spareUser",
        f"spare.user@{DOMAIN}",
        program=consumer,
        totp=True,
        role=Role.CUSTOMER,
        customer=_own_customer(consumer, "Sandbox Spare User"),
    )
    ctx.output["spareUser"] = {**spare_user, "programId": str(consumer.id)}

    operator = _user(ctx, "operator", f"operator@{DOMAIN}", program=None, role=Role.MANAGEMENT, is_staff=True)
    group, _ = Group.objects.get_or_create(name=ADMINISTRATOR_GROUP)
    group.permissions.set(Permission.objects.all())
    User.objects.get(email=operator["email"], program=None).groups.add(group)
    ctx.output["operator"] = operator
