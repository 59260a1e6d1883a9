from payments.models.ledger import LedgerPosting, LedgerTransaction, SystemAccount

__all__ = ["LedgerPosting", "LedgerTransaction", "SystemAccount"]
