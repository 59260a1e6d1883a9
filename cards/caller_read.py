"""The card a sandbox card route names, read in the query that authenticates
its customer caller: the user with its customer and program, the card, and
the card's account (one statement instead of two), as an account route reads
its account with the caller (`bankapi.http.api.AccountScopedView`).

The card and account are joined under the tenancy rules, and the rows are
checked again in memory with the same rules (`CardWithCaller.preloaded_card`)
before use: the caller's program and environment (`TENANT`), and an account
of the caller's own customer. Anything not found that way (a management
caller, another customer's card, a card of no such id) is looked up by the
route's own query, which answers the same.
"""

import uuid
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connections, router
from django.db.models import Model

from bankapi.http.api import _USER_DEFERRED, _with_user_loader
from bankapi.models import Account, Customer, Program
from bankapi.roles import Role
from bankapi.rows import JoinedSelect, Part
from bankapi.scope import Scope, parse_uuid
from bankapi.tenancy import TENANT
from cards.models import Card


def _from_sql(name: Any) -> str:
    def col(alias: str, model: type[Model], field: str) -> str:
        return f"{name(alias)}.{name(model._meta.get_field(field).column)}"  # type: ignore[union-attr]

    def table(model: type[Model]) -> str:
        return name(model._meta.db_table)

    user = get_user_model()
    u_customer, u_program = col("u", user, "customer"), col("u", user, "program")
    return " ".join(
        [
            f"FROM {table(user)} {name('u')}",
            f"LEFT JOIN {table(Customer)} {name('c')} ON {col('c', Customer, 'id')} = {u_customer}",
            f"LEFT JOIN {table(Program)} {name('p')} ON {col('p', Program, 'id')} = {u_program}",
            f"LEFT JOIN {table(Card)} {name('k')} ON {col('k', Card, 'id')} = %s "
            f"AND {col('k', Card, 'program')} = {u_program} "
            f"AND {col('k', Card, 'sandbox')} = {col('u', user, 'sandbox')}",
            f"LEFT JOIN {table(Account)} {name('a')} ON {col('a', Account, 'id')} = "
            f"{col('k', Card, 'account')} AND {col('a', Account, 'customer')} = {u_customer}",
            f"WHERE {col('u', user, 'id')} = %s AND {col('u', user, 'is_active')} = %s",
        ]
    )


_SELECT = JoinedSelect(
    [
        Part(get_user_model(), "u", defer=_USER_DEFERRED),
        Part(Customer, "c"),
        Part(Program, "p"),
        # The card's secrets are not read here (nor decrypted).
        Part(Card, "k", defer=frozenset({"pan", "cvv"})),
        Part(Account, "a"),
    ],
    _from_sql,
)


class CardWithCaller:
    """A view mixin: the bearer authentication reads the user with the card the
    path names (`cardId`) and its account; `preloaded_card` gives that card if
    the rules give it to the caller."""

    kwargs: dict[str, Any]
    _card_read: tuple[Card | None, Account | None] = (None, None)

    def get_authenticators(self) -> list:
        return [
            _with_user_loader(authenticator, self._caller_with_card)
            for authenticator in super().get_authenticators()  # type: ignore[misc]
        ]

    def _caller_with_card(self, user_id: uuid.UUID) -> Any:
        connection = connections[router.db_for_read(Card)]
        pk = Card._meta.pk

        def uuid_param(value: uuid.UUID | None) -> Any:
            return None if value is None else pk.get_db_prep_value(value, connection)

        rows = _SELECT.first(
            connection, [uuid_param(parse_uuid(self.kwargs.get("cardId"))), uuid_param(user_id), True]
        )
        if rows is None:
            return None
        user, customer, program, card, account = rows
        # As select_related would: following them costs no query.
        setattr(user, "customer", customer)  # noqa: B010 (a Model, as the reader gives it)
        setattr(user, "program", program)  # noqa: B010
        self._card_read = (
            card if isinstance(card, Card) else None,
            account if isinstance(account, Account) else None,
        )
        return user

    def preloaded_card(self, scope: Scope, card_id: str) -> Card | None:
        """The card read with the caller, if it is the one `card_id` names and
        the rules give it to this customer caller (its program and environment,
        an account of the caller's own customer); else None."""
        card, account = self._card_read
        if (
            card is None
            or account is None
            or scope.role != Role.CUSTOMER
            or not scope.sandbox
            or scope.customer_id is None
            or scope.program is None
            or parse_uuid(card_id) != card.id
            or card.account_id != account.id
            or account.customer_id != scope.customer_id
            or not TENANT.holds(card, scope)
            or not TENANT.holds(account, scope)
        ):
            return None
        card.account = account
        card.program = scope.program
        return card
