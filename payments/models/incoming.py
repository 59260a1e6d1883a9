"""Money arriving from other banks: a credit transfer to a customer's account."""

from django.db import models
from django.db.models import Q

from bankapi.ids import write_ordered_uuid
from bankapi.models import MONEY, Account, Customer, TenantOwned
from payments.models.ledger import LedgerTransaction


class IncomingPayment(TenantOwned):
    """A credit transfer another bank sent to one of the program's accounts
    (in the sandbox: simulated by the integrator). It is booked once, by its
    own movement (`movement`: external -> the account), when it is received.

    `received_at` is the customer's time of the booking (a test clock's, for
    a customer on one), and so are `created_at` and `updated_at`.
    """

    # The end-to-end id of a credit that came with none, shown as such everywhere.
    NOT_PROVIDED = "NOTPROVIDED"

    # Rises in write order: the list's order among rows of one time (a clock's).
    id = models.UUIDField(primary_key=True, default=write_ordered_uuid, editable=False)
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="incoming_payments")
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="incoming_payments")
    amount = models.DecimalField(**MONEY)
    currency = models.CharField(max_length=3)
    debtor_name = models.CharField(max_length=140)
    debtor_iban = models.CharField(max_length=34, blank=True)
    end_to_end_id = models.CharField(max_length=35)
    remittance_information = models.CharField(max_length=140, blank=True)
    received_at = models.DateTimeField()
    movement = models.OneToOneField(
        LedgerTransaction, on_delete=models.PROTECT, related_name="incoming_payment"
    )

    class Meta:
        indexes = [models.Index(fields=["account", "received_at"], name="incoming_account_received_idx")]
        constraints = [models.CheckConstraint(condition=Q(amount__gt=0), name="incoming_amount_positive")]

    def __str__(self) -> str:
        return f"Incoming {self.amount} {self.currency} from {self.debtor_name}"

    @property
    def statement_reference(self) -> str:
        """What the account's statement and transactions show as the reference:
        the remittance information, else the debtor's name."""
        return self.remittance_information or self.debtor_name
