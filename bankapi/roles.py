class Role:
    """What a signed-in user acts as (DESIGN.md section 3)."""

    CUSTOMER = "customer"  # acts for its own customer
    CUSTODIAN = "custodian"  # acts for every customer of its custodian
    MANAGEMENT = "management"  # no program in its token; names one per request
    CHOICES = [(CUSTOMER, "Customer"), (CUSTODIAN, "Custodian"), (MANAGEMENT, "Management")]
