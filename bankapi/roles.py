class Role:
    """What a signed-in user acts as: a customer, a custodian or management."""

    CUSTOMER = "customer"  # acts for its own customer
    CUSTODIAN = "custodian"  # acts for every customer of its custodian
    MANAGEMENT = "management"  # no program in its token; names one per request
    CHOICES = [(CUSTOMER, "Customer"), (CUSTODIAN, "Custodian"), (MANAGEMENT, "Management")]
