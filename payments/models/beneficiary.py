"""Saved payees of a customer (created in admin and by `bootstrap_sandbox`)."""

import uuid

from django.core.exceptions import ValidationError
from django.db import models

from bankapi.banking import ACCOUNT_NUMBER, SORT_CODE
from bankapi.codes import bic_problem, iban_problem, normalise_bic, normalise_iban
from bankapi.models import Customer, TenantOwned
from payments.payees import IbanAccount, Payee, PayeeAccount, UkAccount


class Beneficiary(TenantOwned):
    """A payee: UK sort code + account number, or IBAN + optional BIC."""

    class AccountKind(models.TextChoices):
        UK = "uk", "UK sort code and account number"
        IBAN = "iban", "IBAN"

    class PayeeType(models.TextChoices):
        CONSUMER = "CONSUMER", "Consumer"
        BUSINESS = "BUSINESS", "Business"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="beneficiaries")
    name = models.CharField(max_length=140)
    account_kind = models.CharField(max_length=4, choices=AccountKind.choices)
    sort_code = models.CharField(max_length=6, blank=True, help_text="6 digits, with a UK account.")
    account_number = models.CharField(max_length=8, blank=True, help_text="8 digits, with a UK account.")
    iban = models.CharField(max_length=34, blank=True, help_text="Mod-97 checked, with an IBAN account.")
    bic = models.CharField(max_length=11, blank=True, help_text="Optional, with an IBAN account.")
    payee_type = models.CharField(max_length=8, choices=PayeeType.choices, blank=True)

    class Meta:
        verbose_name_plural = "beneficiaries"
        indexes = [models.Index(fields=["customer", "created_at"])]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(account_kind="uk", iban="", bic="")
                    & ~models.Q(sort_code="")
                    & ~models.Q(account_number="")
                )
                | (models.Q(account_kind="iban", sort_code="", account_number="") & ~models.Q(iban="")),
                name="beneficiary_account_matches_kind",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.account_kind})"

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.customer_id:
            # The beneficiary lives in its customer's tenant, whatever a form sent.
            self.program_id = self.customer.program_id
            self.sandbox = self.customer.sandbox
        if self.account_kind == self.AccountKind.UK:
            self.sort_code = self.sort_code.replace("-", "")
            if not SORT_CODE.fullmatch(self.sort_code):
                errors["sort_code"] = "Must be 6 digits."
            if not ACCOUNT_NUMBER.fullmatch(self.account_number):
                errors["account_number"] = "Must be 8 digits."
            if self.iban or self.bic:
                errors["iban"] = "IBAN and BIC are not used with a UK account."
        elif self.account_kind == self.AccountKind.IBAN:
            iban_error = iban_problem(self.iban)
            bic_error = bic_problem(self.bic, self.iban) if self.bic else None
            self.iban, self.bic = normalise_iban(self.iban), normalise_bic(self.bic)
            if iban_error:
                errors["iban"] = iban_error
            if bic_error:
                errors["bic"] = bic_error
            if self.sort_code or self.account_number:
                errors["sort_code"] = "Sort code and account number are not used with an IBAN account."
        if errors:
            raise ValidationError(errors)

    @property
    def is_uk(self) -> bool:
        return self.account_kind == self.AccountKind.UK

    def payee(self) -> Payee:
        """The beneficiary as a payment to it pays it, today."""
        account: PayeeAccount = (
            UkAccount(sort_code=self.sort_code, account_number=self.account_number)
            if self.is_uk
            else IbanAccount(iban=self.iban, bic=self.bic)
        )
        return Payee(name=self.name, account=account, payee_type=self.payee_type)
