import uuid

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from authn.models import User
from bankapi.models import Custodian, Customer, Program
from bankapi.roles import Role
from bankapi.scope import Scope, customers_of


def scope(sandbox: dict, role: str, **party) -> Scope:
    return Scope(
        program_id=uuid.UUID(sandbox["consumerProgramId"]),
        sandbox=True,
        role=role,
        user_id=uuid.uuid4(),
        customer_id=party.get("customer_id"),
        custodian_id=party.get("custodian_id"),
    )


def test_a_custodian_acts_for_its_own_customers_only(sandbox):
    custodian = Custodian.objects.get(
        id=Customer.objects.get(id=sandbox["custodian"]["customerIds"][0]).custodian_id
    )
    ids = {str(c.id) for c in customers_of(scope(sandbox, Role.CUSTODIAN, custodian_id=custodian.id))}
    assert ids == set(sandbox["custodian"]["customerIds"])


@pytest.mark.parametrize("role", [Role.CUSTOMER, Role.CUSTODIAN])
def test_a_scope_missing_its_party_acts_for_nobody(sandbox, role):
    # Not "every customer without a custodian", which a null filter would match.
    assert Customer.objects.filter(program_id=sandbox["consumerProgramId"], custodian=None).exists()
    assert list(customers_of(scope(sandbox, role))) == []


@pytest.mark.parametrize("role", [Role.CUSTOMER, Role.CUSTODIAN])
def test_the_database_refuses_a_user_without_the_party_its_role_acts_for(sandbox, role):
    with pytest.raises(IntegrityError), transaction.atomic():
        User.objects.create_user(
            f"orphan.{role}@sandbox.example",
            "Orphan-Password-42",
            program_id=sandbox["consumerProgramId"],
            role=role,
        )


def test_admin_validation_explains_an_inconsistent_user(sandbox):
    consumer = Program.objects.get(id=sandbox["consumerProgramId"])
    elsewhere = Customer.objects.get(id=sandbox["business"]["customerId"])
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
