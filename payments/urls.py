from django.urls import path

from payments.views.clock import SandboxClockView
from payments.views.fx import FxQuoteView
from payments.views.incoming import IncomingPaymentListView, IncomingPaymentView, SandboxIncomingPaymentView
from payments.views.lists import (
    PaymentRequestListView,
    ScheduledPaymentListView,
    ScheduledPaymentView,
    TransactionListView,
)
from payments.views.payments import (
    InternationalTransferCreateView,
    PaymentCreateView,
    SandboxFailView,
    SandboxSettleView,
)
from payments.views.returns import SandboxReturnView
from payments.views.statements import BalanceView, LimitsView, StatementView

ACCOUNT = "customers/<str:customerId>/accounts/<str:accountId>"

urlpatterns = [
    path(f"{ACCOUNT}/payments", PaymentCreateView.as_view()),
    path(f"{ACCOUNT}/international-transfers", InternationalTransferCreateView.as_view()),
    path(f"{ACCOUNT}/payment-requests", PaymentRequestListView.as_view()),
    path(f"{ACCOUNT}/transactions", TransactionListView.as_view()),
    path(f"{ACCOUNT}/scheduled-payments", ScheduledPaymentListView.as_view()),
    path(f"{ACCOUNT}/statements", StatementView.as_view()),
    path(f"{ACCOUNT}/balances", BalanceView.as_view()),
    path(f"{ACCOUNT}/limits", LimitsView.as_view()),
    path(f"{ACCOUNT}/incoming-payments", IncomingPaymentListView.as_view()),
    path(f"{ACCOUNT}/incoming-payments/<str:incomingPaymentId>", IncomingPaymentView.as_view()),
    path(f"{ACCOUNT}/scheduled-payments/<str:scheduleId>", ScheduledPaymentView.as_view()),
    path("sandbox/payment-requests/<str:requestId>/settle", SandboxSettleView.as_view()),
    path("sandbox/payment-requests/<str:requestId>/fail", SandboxFailView.as_view()),
    path("sandbox/payment-requests/<str:requestId>/return", SandboxReturnView.as_view()),
    path("sandbox/scheduled-payments/run", SandboxClockView.as_view()),
    path("sandbox/incoming-payments", SandboxIncomingPaymentView.as_view()),
    path("accounts/<str:accountId>/fx/quote", FxQuoteView.as_view(), name="fx-quote"),
]
