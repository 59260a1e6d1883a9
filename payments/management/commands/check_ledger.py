from django.core.management.base import BaseCommand, CommandError

from payments.ledger import ledger_check


class Command(BaseCommand):
    help = (
        "Check the ledger invariant: every currency's postings sum to zero and every "
        "account's balance equals the sum of its postings, what it holds equals the sum of "
        "its open holds (never more than its balance), and each posting's balance "
        "after it continues its account's running balance. Exits non-zero when broken."
    )

    def handle(self, *args, **options):
        report = ledger_check()
        if report.ok:
            self.stdout.write(
                self.style.SUCCESS(
                    "Ledger OK: every currency balances, every balance matches, "
                    "every hold is counted, every running balance follows."
                )
            )
            return
        for currency, total in report.unbalanced_currencies.items():
            self.stderr.write(f"Currency {currency} does not balance: postings sum to {total}")
        for account_id, (balance, posted) in report.mismatched_accounts.items():
            self.stderr.write(f"Account {account_id}: balance {balance}, postings sum to {posted}")
        for account_id, (held, holding) in report.mismatched_holds.items():
            self.stderr.write(f"Account {account_id}: holds {held}, its open holds sum to {holding}")
        for account_id, posting_id in report.broken_running_balances.items():
            self.stderr.write(
                f"Account {account_id}: posting {posting_id} does not continue the running balance"
            )
        for account_id, layout, day in report.stale_statement_days:
            self.stderr.write(f"Account {account_id}: the stored {layout} statement lines of {day} are stale")
        raise CommandError("Ledger invariant broken")
