import factory
from factory.django import DjangoModelFactory, Password

from authn.models import User
from bankapi.models import Customer
from bankapi.roles import Role

PASSWORD = "Quiet-Harbour-Lantern-42"


class UserFactory(DjangoModelFactory):
    """A signed-up user with PASSWORD and no second factor; pass `program_id`."""

    class Meta:
        model = User

    email = factory.Sequence(lambda n: f"person{n}@example.test")
    password = Password(PASSWORD)
    role = Role.CUSTOMER
    sandbox = True
    # A customer user acts for a customer of its own program.
    customer = factory.LazyAttribute(
        lambda user: (
            Customer.objects.create(program_id=user.program_id, sandbox=user.sandbox, name=user.email)
            if user.role == Role.CUSTOMER
            else None
        )
    )
