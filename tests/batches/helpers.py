"""Batches submitted straight through the services (no step-up), for the
processing tests: the HTTP submit has its own tests."""

from django.db import transaction

from authn.models import User
from bankapi.roles import Role
from bankapi.scope import Scope
from batches.actors import Actor
from batches.models import Batch
from batches.services.challenges import payments_checked
from batches.services.processing import batch_create


def custodian_actor(user: User) -> Actor:
    return Actor(
        scope=Scope(
            program_id=user.program_id,
            sandbox=user.sandbox,
            role=Role.CUSTODIAN,
            user_id=user.id,
            customer_id=None,
            custodian_id=user.custodian_id,
        )
    )


def batch_submitted(user: User, payments: list[dict]) -> Batch:
    actor = custodian_actor(user)
    checked, currency = payments_checked(actor, payments)
    with transaction.atomic():
        return batch_create(actor=actor, user=user, checked=checked, currency=currency, draft=None)
