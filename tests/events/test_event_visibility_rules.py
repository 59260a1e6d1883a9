"""Who sees which event is `bankapi.tenancy.EVENTS`, read by the events
selector: one table of callers against events of two programs, both
environments, two customers and a custodian. The rule read in memory
(`Rule.holds`) agrees with the selector on every row."""

import uuid

import pytest

from bankapi.models import Custodian, Customer, Program
from bankapi.roles import Role
from bankapi.scope import Scope
from bankapi.tenancy import EVENTS
from events.models import Event, EventType
from events.selectors import events_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    program, other_program = Program.objects.create(name="P"), Program.objects.create(name="Q")
    custodian = Custodian.objects.create(program=program, sandbox=True, name="C")
    alice = Customer.objects.create(program=program, sandbox=True, name="Alice", custodian=custodian)
    bob = Customer.objects.create(program=program, sandbox=True, name="Bob")
    live = Customer.objects.create(program=program, sandbox=False, name="Live")
    stranger = Customer.objects.create(program=other_program, sandbox=True, name="Stranger")

    def event(name, customer=None, custodian=None, *, program=program, sandbox=True):
        return name, Event.objects.create(
            program=program,
            sandbox=sandbox,
            customer=customer,
            custodian=custodian,
            type=EventType.PAYMENT_REQUEST_ACCEPTED,
            resource_type="payment_request",
            resource_id=str(uuid.uuid4()),
            data={},
        )

    events = dict(
        [
            event("alice", alice),
            event("bob", bob),
            event("custodian", custodian=custodian),
            event("live", live, sandbox=False),
            event("stranger", stranger, program=other_program),
        ]
    )
    return {"program": program, "custodian": custodian, "alice": alice, "events": events}


def scope(world, role, *, customer="alice", custodian=True, program=None, sandbox=True):
    return Scope(
        program_id=program or world["program"].id,
        sandbox=sandbox,
        role=role,
        user_id=uuid.uuid4(),
        customer_id=world[customer].id if role == Role.CUSTOMER and customer else None,
        custodian_id=world["custodian"].id if role == Role.CUSTODIAN and custodian else None,
    )


CALLERS = {
    "customer": (dict(role=Role.CUSTOMER), {"alice"}),
    "customer without its customer": (dict(role=Role.CUSTOMER, customer=None), set()),
    "customer, other environment": (dict(role=Role.CUSTOMER, sandbox=False), set()),
    "custodian": (dict(role=Role.CUSTODIAN), {"custodian"}),
    "custodian without its custodian": (dict(role=Role.CUSTODIAN, custodian=False), set()),
    "management": (dict(role=Role.MANAGEMENT), {"alice", "bob", "custodian"}),
    "management, production": (dict(role=Role.MANAGEMENT, sandbox=False), {"live"}),
    "management, another program": (dict(role=Role.MANAGEMENT, program=uuid.uuid4()), set()),
}


@pytest.mark.parametrize("caller", CALLERS)
def test_each_caller_sees_the_events_the_rule_gives_it(world, caller):
    fields, expected = CALLERS[caller]
    caller_scope = scope(world, **fields)
    names = {event.pk: name for name, event in world["events"].items()}

    seen = {names[event.pk] for event in events_of(caller_scope)}
    held = {
        name
        for name, event in world["events"].items()
        if EVENTS[caller_scope.role].holds(event, caller_scope)
    }

    assert seen == expected
    assert held == expected
