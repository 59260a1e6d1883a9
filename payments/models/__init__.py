from payments.models.beneficiary import Beneficiary
from payments.models.fx import FxQuote, FxRate
from payments.models.ledger import LedgerPosting, LedgerTransaction, SystemAccount
from payments.models.payment import PaymentRequest, StatementEntry
from payments.models.schedule import ScheduledPayment, ScheduleRun
from payments.models.usage import DailyOutboundUsage

__all__ = [
    "Beneficiary",
    "DailyOutboundUsage",
    "FxQuote",
    "FxRate",
    "LedgerPosting",
    "LedgerTransaction",
    "PaymentRequest",
    "ScheduleRun",
    "ScheduledPayment",
    "StatementEntry",
    "SystemAccount",
]
