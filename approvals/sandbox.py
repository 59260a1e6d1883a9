"""`bootstrap_sandbox`, approvals part: the business customer's and the custodian's
policy, and a second user of each who approves (`businessApprover`, `custodianApprover`)."""

from approvals.models import ApprovalPolicy
from authn.sandbox import DOMAIN, sandbox_user
from bankapi.models import Custodian, Customer
from bankapi.roles import Role
from bankapi.sandbox import SandboxContext

SANDBOX_TIERS = [{"minAmount": "20000.00", "approvers": 1}]
SANDBOX_EXPIRES_AFTER_HOURS = 168


def _policy(*, customer: Customer | None = None, custodian: Custodian | None = None) -> None:
    party: Customer | Custodian | None = customer or custodian
    assert party is not None
    ApprovalPolicy.objects.update_or_create(
        customer=customer,
        custodian=custodian,
        defaults={
            "program": party.program,
            "sandbox": True,
            "tiers": SANDBOX_TIERS,
            "expires_after_hours": SANDBOX_EXPIRES_AFTER_HOURS,
            "passkey_required": False,
        },
    )


def bootstrap(ctx: SandboxContext) -> None:
    business = ctx.objects["business"]
    custodian = ctx.objects["custodian"]
    _policy(customer=business)
    _policy(custodian=custodian)
    ctx.output["businessApprover"] = {
        **sandbox_user(
            ctx,
            "businessApprover",
            f"business.approver@{DOMAIN}",
            program=business.program,
            totp=True,
            role=Role.CUSTOMER,
            customer=business,
        ),
        "programId": str(business.program_id),
    }
    ctx.output["custodianApprover"] = {
        **sandbox_user(
            ctx,
            "custodianApprover",
            f"custodian.approver@{DOMAIN}",
            program=custodian.program,
            totp=True,
            role=Role.CUSTODIAN,
            custodian=custodian,
        ),
        "programId": str(custodian.program_id),
    }
