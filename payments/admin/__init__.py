"""The payments' back-office screens, one module per group; importing them here
registers them when the admin's autodiscovery imports `payments.admin`."""

from payments.admin import fx, incoming, ledger, payments

__all__ = ["fx", "incoming", "ledger", "payments"]
