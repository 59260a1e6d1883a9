"""Batches submitted straight through the services (no step-up), for the
processing tests: the HTTP submit has its own tests."""

from django.db import transaction

from authn.models import User
from bankapi.roles import Role
from bankapi.scope import Scope
from batches.actors import Actor
from batches.models import Batch
from batches.rules import sent_payment_from_wire
from batches.services.challenges import payments_checked
from batches.services.creation import batch_create


def actor_of(user: User) -> Actor:
    """The actor a customer or custodian user's token makes on the general route."""
    return Actor(
        scope=Scope(
            program_id=user.program_id,
            sandbox=user.sandbox,
            role=user.role,
            user_id=user.id,
            customer_id=user.customer_id if user.role == Role.CUSTOMER else None,
            custodian_id=user.custodian_id if user.role == Role.CUSTODIAN else None,
        )
    )


def batch_submitted(user: User, payments: list[dict]) -> Batch:
    """A batch of `payments`, written as a request body sends them."""
    actor = actor_of(user)
    checked, currency = payments_checked(actor, [sent_payment_from_wire(payment) for payment in payments])
    with transaction.atomic():
        return batch_create(actor=actor, user=user, checked=checked, currency=currency, draft=None)
