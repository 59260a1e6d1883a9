import uuid

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from authn.models import User
from bankapi.models import Customer, Program
from bankapi.roles import Role
from bankapi.scope import Scope, customers_of
from tests.support.factories import custodian_with_clients


def scope(program: Program, role: str, **party) -> Scope:
    return Scope(
        program_id=program.id,
        sandbox=True,
        role=role,
        user_id=uuid.uuid4(),
        customer_id=party.get("customer_id"),
        custodian_id=party.get("custodian_id"),
    )


def test_a_custodian_acts_for_its_own_customers_only(program, customer):
    custodian = custodian_with_clients(program).custodian
    custodian_with_clients(program, name="Another Custodian")

    ids = {c.id for c in customers_of(scope(program, Role.CUSTODIAN, custodian_id=custodian.id))}

    assert ids == set(Customer.objects.filter(custodian=custodian).values_list("id", flat=True))
    assert len(ids) == 2


@pytest.mark.parametrize("role", [Role.CUSTOMER, Role.CUSTODIAN])
def test_a_scope_missing_its_party_acts_for_nobody(program, customer, role):
    custodian_with_clients(program)
    # Not "every customer without a custodian", which a null filter would match.
    assert Customer.objects.filter(program=program, custodian=None).exists()
    assert list(customers_of(scope(program, role))) == []


@pytest.mark.parametrize("role", [Role.CUSTOMER, Role.CUSTODIAN])
def test_the_database_refuses_a_user_without_the_party_its_role_acts_for(program, role):
    with pytest.raises(IntegrityError), transaction.atomic():
        User.objects.create_user(
            f"orphan.{role}@example.test",
            "Orphan-Password-42",
            program_id=program.id,
            role=role,
        )


def test_admin_validation_explains_an_inconsistent_user(program, business):
    consumer = program
    elsewhere = business.customer
    cases = [
        (User(email="a@x.test", program=consumer, role=Role.CUSTOMER), "customer"),
        (User(email="b@x.test", program=consumer, role=Role.CUSTODIAN), "custodian"),
        (
            User(email="c@x.test", program=consumer, role=Role.CUSTOMER, customer=elsewhere),
            "customer",
        ),
        (User(email="d@x.test", program=consumer, role=Role.MANAGEMENT), "role"),
    ]
    for user, field in cases:
        with pytest.raises(ValidationError) as caught:
            user.clean()
        assert field in caught.value.message_dict
