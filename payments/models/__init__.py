from payments.models.beneficiary import Beneficiary
from payments.models.fx import FxQuote, FxRate
from payments.models.incoming import IncomingPayment
from payments.models.ledger import Hold, LedgerPosting, LedgerTransaction, StatementDay, SystemAccount
from payments.models.payment import PaymentRequest, StatementEntry
from payments.models.schedule import ScheduledPayment, ScheduleRun

__all__ = [
    "Beneficiary",
    "FxQuote",
    "FxRate",
    "Hold",
    "IncomingPayment",
    "LedgerPosting",
    "LedgerTransaction",
    "PaymentRequest",
    "ScheduleRun",
    "ScheduledPayment",
    "StatementDay",
    "StatementEntry",
    "SystemAccount",
]
