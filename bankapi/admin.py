from django.contrib import admin

from bankapi.models import Account, Custodian, Customer, Program


@admin.register(Program)
class ProgramAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "account_type",
        "international_payments_enabled",
        "cardholders_enabled",
        "pin_confirmation_enabled",
    )
    search_fields = ("name",)


@admin.register(Custodian)
class CustodianAdmin(admin.ModelAdmin):
    list_display = ("name", "program", "sandbox")
    list_filter = ("sandbox", "program")
    search_fields = ("name",)
    list_select_related = ("program",)


@admin.register(Customer)
class CustomerAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "program", "sandbox", "custodian")
    list_filter = ("sandbox", "kind", "program")
    search_fields = ("name", "id")
    list_select_related = ("program", "custodian")
    raw_id_fields = ("custodian",)


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "customer", "currency", "balance", "sandbox")
    list_filter = ("sandbox", "currency", "program")
    search_fields = ("id", "name", "account_number", "iban")
    list_select_related = ("customer",)
    raw_id_fields = ("customer",)
    # Balances change only through ledger postings, never by editing.
    readonly_fields = ("balance",)
