"""Recording what staff do in the back office.

Only what happens inside a back-office request is recorded: the admin site runs
each of its views inside `staff_acting`, and the receivers below do nothing
outside it. So a payment, a batch or any API call saving the same models writes
no history row and issues no extra SQL (the receivers only read a context
variable); a balance moved by the ledger is not a staff change.

Which models are audited, and which of their fields are left out, is decided
here in one place (`AUDITED`). Secrets never reach a record: encrypted columns
(card PAN and CVV, TOTP seeds, webhook secrets) are always left out, and so are
password hashes and PIN hashes.
"""

import hashlib
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.contrib.contenttypes.models import ContentType
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models.fields.files import FieldFile
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save

from audit.models import ChangeRecord, StaffView
from bankapi.crypto import EncryptedTextField

# Model label -> fields never recorded besides the encrypted ones and the
# `auto_now` timestamps (which change on every save and say nothing).
AUDITED: dict[str, frozenset[str]] = {
    "bankapi.Program": frozenset(),
    "bankapi.Custodian": frozenset(),
    "bankapi.Customer": frozenset(),
    # Balances and the daily outbound total move with payments (the ledger), not staff.
    "bankapi.Account": frozenset({"balance", "outbound_day", "outbound_total"}),
    "payments.Beneficiary": frozenset(),
    "payments.FxRate": frozenset(),
    "cards.Card": frozenset(),
    "cards.Cardholder": frozenset(),
    "onboarding.Application": frozenset(),
    "onboarding.Ubo": frozenset(),
    "onboarding.VerificationStep": frozenset(),
    "onboarding.LegalDocumentSet": frozenset(),
    "onboarding.LegalDocument": frozenset(),
    "onboarding.ProgramOnboarding": frozenset(),
    "events.WebhookEndpoint": frozenset(),
    "approvals.ApprovalPolicy": frozenset(),
    "authn.User": frozenset({"password", "last_login", "totp_last_step", "step_up_pin"}),
    "auth.Group": frozenset(),
}

# Models whose back-office pages show a customer's personal data, card details
# or documents: opening one of their pages, or a list of them, writes a StaffView
# per record shown. Besides the people themselves (customers, users, cardholders,
# UBOs, payees), the records whose pages name them, their e-mails or their account
# numbers: accounts, payments, incoming payments (their debtor too), card
# authorizations, schedules and batch items (the account and customer they
# belong to), events (their customer), and the sign-in records (a user's
# e-mail, or the e-mail typed at sign-in); approvals (the payee, the accounts and
# the initiator's e-mail they hold) and their policies (the customer they are of);
# batches and drafts (the customer paying); holds, statement entries, ledger
# transactions and postings and FX quotes (the account they are on, and a
# payment's reference, the customer's own words); the admin log and the audit's own records
# (the names of the records they are about). A page of any other model is shown
# to name none of these by tests/backoffice/test_audit_every_page.py.
PERSONAL_DATA: frozenset[str] = frozenset(
    {
        "approvals.Approval",
        "approvals.ApprovalPolicy",
        "batches.Batch",
        "batches.Draft",
        "payments.Hold",
        "payments.StatementEntry",
        "payments.LedgerPosting",
        "payments.LedgerTransaction",
        "payments.FxQuote",
        "payments.ScheduleRun",
        "bankapi.IdempotencyRecord",
        "admin.LogEntry",
        "audit.ChangeRecord",
        "audit.StaffView",
        "bankapi.Customer",
        "bankapi.Account",
        "authn.User",
        "authn.PasskeyCredential",
        "authn.LoginThrottle",
        "authn.RefreshToken",
        "authn.AuthChallenge",
        "payments.Beneficiary",
        "payments.PaymentRequest",
        "payments.IncomingPayment",
        "payments.ScheduledPayment",
        "batches.BatchItem",
        "batches.ScaChallenge",
        "cards.Card",
        "cards.CardAuthorization",
        "cards.Cardholder",
        "onboarding.Application",
        "onboarding.Ubo",
        "onboarding.VerificationStep",
        "onboarding.DocumentUpload",
        "events.Event",
    }
)


@dataclass
class _Actor:
    user: Any  # the request's user (a lazy object until first used)
    page: str
    # (model label, pk) -> the audited fields as stored before this save.
    before: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # (model label.relation, pk) -> the record of that relation's edit in this
    # request: a form's edit arrives as a removal then an addition, one record.
    relation_edits: dict[tuple[str, str], ChangeRecord] = field(default_factory=dict)


_ACTOR: ContextVar[_Actor | None] = ContextVar("audit_actor", default=None)


@contextmanager
def staff_acting(user: Any, page: str) -> Iterator[None]:
    """Record the changes made inside as made by this staff user from this page."""
    token = _ACTOR.set(_Actor(user=user, page=page[:500]))
    try:
        yield
    finally:
        _ACTOR.reset(token)


def audited_fields(model: type[models.Model]) -> "list[models.Field[Any, Any]]":
    left_out = AUDITED.get(model._meta.label, frozenset())
    return [
        f
        for f in model._meta.concrete_fields
        if f.name not in left_out
        and not isinstance(f, EncryptedTextField)
        and not getattr(f, "auto_now", False)
    ]


def _json(value: Any) -> Any:
    if isinstance(value, FieldFile):
        value = value.name or ""
    elif isinstance(value, bytes | memoryview):
        # A document's content: its size and digest say whether it changed.
        content = bytes(value)
        value = f"{len(content)} bytes, sha256 {hashlib.sha256(content).hexdigest()}"
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def snapshot(instance: models.Model) -> dict[str, Any]:
    """The audited fields of a record, as JSON values (a foreign key as its id)."""
    return {f.name: _json(f.value_from_object(instance)) for f in audited_fields(type(instance))}


def _key(instance: models.Model) -> tuple[str, str]:
    return instance._meta.label, str(instance.pk)


def _record(
    actor: _Actor,
    instance: models.Model,
    action: str,
    before: dict[str, Any],
    after: dict[str, Any],
) -> ChangeRecord:
    user = actor.user if getattr(actor.user, "is_authenticated", False) else None
    return ChangeRecord.objects.create(
        actor=user,
        actor_email=getattr(user, "email", "") or "",
        content_type=ContentType.objects.get_for_model(instance, for_concrete_model=False),
        object_id=str(instance.pk),
        object_repr=str(instance)[:200],
        action=action,
        before=before,
        after=after,
        page=actor.page,
    )


def _before_save(
    sender: type[models.Model], instance: models.Model, raw: bool = False, **kwargs: Any
) -> None:
    actor = _ACTOR.get()
    if actor is None or raw or instance._state.adding or instance.pk is None:
        return
    stored = sender._base_manager.filter(pk=instance.pk).first()
    if stored is not None:
        actor.before[_key(instance)] = snapshot(stored)


def _after_save(
    sender: type[models.Model], instance: models.Model, created: bool, raw: bool = False, **kwargs: Any
) -> None:
    actor = _ACTOR.get()
    if actor is None or raw:
        return
    after = snapshot(instance)
    before = actor.before.pop(_key(instance), None)
    if created or before is None:
        _record(actor, instance, ChangeRecord.Action.ADDED, {}, after)
        return
    changed = sorted(name for name in after if after[name] != before.get(name))
    if changed:
        _record(
            actor,
            instance,
            ChangeRecord.Action.CHANGED,
            {name: before.get(name) for name in changed},
            {name: after[name] for name in changed},
        )


def _after_delete(sender: type[models.Model], instance: models.Model, **kwargs: Any) -> None:
    actor = _ACTOR.get()
    if actor is not None:
        _record(actor, instance, ChangeRecord.Action.DELETED, snapshot(instance), {})


def _related_names(instance: models.Model, name: str) -> list[str]:
    return sorted(str(related) for related in getattr(instance, name).all())


def _m2m_changed(
    sender: type[models.Model], instance: models.Model, action: str, reverse: bool, **kwargs: Any
) -> None:
    """A many-to-many edit from the record's own form (a user's groups, a group's
    permissions, a card's holders): the full list before and after."""
    actor = _ACTOR.get()
    if actor is None or reverse or instance._meta.label not in AUDITED:
        return
    names = [f.name for f in instance._meta.many_to_many if f.remote_field.through is sender]
    if not names:
        return
    name = names[0]
    key = (f"{instance._meta.label}.{name}", str(instance.pk))
    if action.startswith("pre_"):
        if key not in actor.relation_edits:
            actor.before[key] = {name: _related_names(instance, name)}
        return
    after = {name: _related_names(instance, name)}
    edit = actor.relation_edits.get(key)
    if edit is not None:
        edit.after = after
        edit.save(update_fields=["after"])
        return
    before = actor.before.pop(key, {name: []})
    if after != before:
        actor.relation_edits[key] = _record(actor, instance, ChangeRecord.Action.CHANGED, before, after)


def connect_recorders() -> None:
    """Connect the receivers to each audited model (only those: other models'
    saves do not even reach them)."""
    for label in AUDITED:
        model = apps.get_model(label)
        uid = f"audit.{label}"
        pre_save.connect(_before_save, sender=model, dispatch_uid=uid)
        post_save.connect(_after_save, sender=model, dispatch_uid=uid)
        post_delete.connect(_after_delete, sender=model, dispatch_uid=uid)
        for relation in model._meta.many_to_many:
            through = relation.remote_field.through
            m2m_changed.connect(_m2m_changed, sender=through, dispatch_uid=f"{uid}.{relation.name}")


def staff_view_record(user: Any, instance: models.Model, page: str) -> StaffView | None:
    """Record that this staff user opened this page of this record, if it shows
    personal data, card details or a document."""
    if instance._meta.label not in PERSONAL_DATA:
        return None
    return StaffView.objects.create(
        actor=user if getattr(user, "is_authenticated", False) else None,
        actor_email=getattr(user, "email", "") or "",
        content_type=ContentType.objects.get_for_model(instance, for_concrete_model=False),
        object_id=str(instance.pk),
        object_repr=str(instance)[:200],
        page=page[:500],
    )


def staff_list_view_record(
    user: Any, model: type[models.Model], shown: Iterable[models.Model], search: str, page: str
) -> list[StaffView]:
    """Record that this staff user was shown these records of a list of personal
    data (a changelist, its search, an action's page): one StaffView per record,
    with the search text; one without an object id when the list showed none.
    One INSERT, however many rows the page holds."""
    if model._meta.label not in PERSONAL_DATA:
        return []
    common = {
        "actor": user if getattr(user, "is_authenticated", False) else None,
        "actor_email": getattr(user, "email", "") or "",
        "content_type": ContentType.objects.get_for_model(model, for_concrete_model=False),
        "search": search[:200],
        "page": page[:500],
    }
    records = [StaffView(object_id=str(row.pk), object_repr=str(row)[:200], **common) for row in shown]
    return StaffView.objects.bulk_create(records or [StaffView(object_id="", object_repr="", **common)])


def changes_of(instance: models.Model, limit: int = 200) -> list[ChangeRecord]:
    """The recorded changes of a record, newest first (the latest `limit`)."""
    content_type = ContentType.objects.get_for_model(instance, for_concrete_model=False)
    return list(ChangeRecord.objects.filter(content_type=content_type, object_id=str(instance.pk))[:limit])
