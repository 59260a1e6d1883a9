"""FX quotes (spec 2.6 and 4.5, DESIGN 8).

Other apps call `fx_quote_consume` (inside their transaction) and `fx_quote_amounts`.
"""

from payments.fx.services import fx_quote_amounts, fx_quote_consume, fx_quote_create

__all__ = ["fx_quote_amounts", "fx_quote_consume", "fx_quote_create"]
