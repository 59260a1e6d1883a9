"""Card numbers: the Luhn check (ISO/IEC 7812-1) and sandbox test numbers."""

import re
import secrets

# A test range: sandbox numbers are Luhn-valid but belong to no real card.
SANDBOX_PREFIX = "400000"
PAN_PATTERN = re.compile(r"[0-9]{12,19}", re.ASCII)
CVV_PATTERN = re.compile(r"[0-9]{3,4}", re.ASCII)


def luhn_check_digit(partial: str) -> str:
    """The digit that makes `partial` + digit pass the Luhn check."""
    total = 0
    for position, char in enumerate(reversed(partial)):
        digit = int(char)
        if position % 2 == 0:  # doubled: they sit at odd places once the check digit is appended
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return str((10 - total % 10) % 10)


def luhn_valid(number: str) -> bool:
    return bool(PAN_PATTERN.fullmatch(number)) and luhn_check_digit(number[:-1]) == number[-1]


def sandbox_pan() -> str:
    """A 16-digit Luhn-valid test number in the sandbox range."""
    body = SANDBOX_PREFIX + "".join(secrets.choice("0123456789") for _ in range(15 - len(SANDBOX_PREFIX)))
    return body + luhn_check_digit(body)


def sandbox_cvv() -> str:
    return f"{secrets.randbelow(1000):03d}"
