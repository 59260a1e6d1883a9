from django.urls import path

from payments.views_fx import FxQuoteView

urlpatterns: list = [
    path("accounts/<str:accountId>/fx/quote", FxQuoteView.as_view(), name="fx-quote"),
]
