"""FX quotes: a price to convert one currency into another, spent at most once.

Other apps call `fx_quote_consume` (inside their transaction) and `fx_quote_amounts`.
"""

from payments.fx.services import fx_quote_amounts, fx_quote_consume, fx_quote_create

__all__ = ["fx_quote_amounts", "fx_quote_consume", "fx_quote_create"]
