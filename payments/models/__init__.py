from payments.models.beneficiary import Beneficiary
from payments.models.fx import FxQuote, FxRate
from payments.models.ledger import LedgerPosting, LedgerTransaction, SystemAccount
from payments.models.payment import IdempotencyRecord, PaymentRequest, StatementEntry
from payments.models.schedule import ScheduledPayment, ScheduleRun

__all__ = [
    "Beneficiary",
    "FxQuote",
    "FxRate",
    "IdempotencyRecord",
    "LedgerPosting",
    "LedgerTransaction",
    "PaymentRequest",
    "ScheduleRun",
    "ScheduledPayment",
    "StatementEntry",
    "SystemAccount",
]
