from payments.models.fx import FxQuote, FxRate  # noqa: F401 - registers the FX models with the app
from payments.models.ledger import LedgerPosting, LedgerTransaction, SystemAccount

__all__ = ["LedgerPosting", "LedgerTransaction", "SystemAccount"]
