"""The payments' routes, one module per group (`payments/urls.py` imports each):
creating payments and transfers (`payments.py`), lists and schedules, statements
and balances, FX quotes, incoming payments, returns and the sandbox clock."""
