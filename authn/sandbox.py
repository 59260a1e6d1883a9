"""`bootstrap_sandbox`, authentication part: the sandbox users and their secrets."""

import secrets

import pyotp
from django.contrib.auth.models import Group, Permission

from authn.models import PasskeyCredential, User
from authn.services.stepup import step_up_pin_matches, step_up_pin_set
from authn.tokens import tokens_revoke_all
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
    fresh: bool = False,
    **fields,
) -> dict:
    """The sandbox user at `path`, made once and put back on every rerun.

    On a rerun the contract wins over what clients did since: the printed password
    works again, `must_change_password` is what the contract says (newUser: True,
    so it is NEW_PASSWORD_REQUIRED again), the e-mail is verified, and a `fresh`
    user (newUser, passkeyUser: no second factor promised) loses any TOTP or
    passkey enrolled since. Anything restored ends the user's earlier tokens and
    sessions, as a password change does.
    """
    password = ctx.remembered(f"{path}.{password_key}", new_password)
    user = User.objects.filter(email=email, program=program).first()
    if user is None:
        user = User(email=email, program=program, sandbox=True, **fields)
        user.set_password(password)
        if totp:
            user.totp_secret = ctx.remembered(f"{path}.totpSecret", pyotp.random_base32)
            user.totp_confirmed = True
        user.save()
    else:
        _restore(user, password, must_change_password=fields.get("must_change_password", False), fresh=fresh)
    out = {"email": email, password_key: password}
    if totp:
        out["totpSecret"] = user.totp_secret
    return out


# The other apps' bootstrap steps make their users the same way.
sandbox_user = _user


def _restore(user: User, password: str, *, must_change_password: bool, fresh: bool) -> None:
    changed = []
    if not user.check_password(password):
        # Changed through the API since, or the manifest was lost but the user
        # kept: print a password that works.
        user.set_password(password)
        changed.append("password")
    if user.must_change_password != must_change_password:
        user.must_change_password = must_change_password
        changed.append("must_change_password")
    if not user.email_verified:
        user.email_verified = True
        changed.append("email_verified")
    if fresh and (user.totp_secret or user.totp_confirmed or user.has_passkey):
        PasskeyCredential.objects.filter(user=user).delete()
        user.totp_secret, user.totp_confirmed, user.totp_last_step = "", False, 0
        changed += ["totp_secret", "totp_confirmed", "totp_last_step"]
    if changed:
        user.save(update_fields=changed)
        tokens_revoke_all(user)


def _own_customer(program: Program, name: str) -> Customer:
    customer, _ = Customer.objects.get_or_create(program=program, sandbox=True, name=name)
    return customer


def _business_pin(ctx: SandboxContext) -> str:
    """The business customer's step-up PIN (its program offers PIN confirmation)."""
    pin = ctx.remembered("business.pin", lambda: f"{secrets.randbelow(10**6):06d}")
    user = User.objects.get(program=ctx.objects["business_program"], email=ctx.output["business"]["email"])
    if not step_up_pin_matches(user, pin):
        step_up_pin_set(user=user, pin=pin)
    return pin


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
    ctx.output["business"]["pin"] = _business_pin(ctx)

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
        fresh=True,
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
        fresh=True,
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
