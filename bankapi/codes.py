"""IBANs, BICs and currency codes, read as a bank reads them.

The one home of these rules: inline payees, saved beneficiaries, batch items, FX
quotes, international transfers, accounts (admin and bootstrap) and any payment
file format call these functions, so a value one of them takes is one every other
takes. Each `*_problem` function answers None for a good value, else a sentence a
user can act on (without the field's name: the caller knows where it was read).

- An IBAN is valid only with a country that issues IBANs, that country's length
  and account (BBAN) format, and right mod-97 check digits. The `schwifty`
  package holds the country formats.
- A BIC is 8 or 11 letters and digits (ISO 9362) naming a real country; with an
  IBAN whose country has a bank registry in `schwifty`, its first 8 characters
  (bank, country, location) must be those of a BIC the registry lists for the
  IBAN's bank code. A bank the registry does not list cannot be checked and is
  taken.
- A currency is an ISO 4217 code with 2 minor units (cents, pence): the ledger
  holds amounts to 2 decimal places, so yen (0) or dinars (3) cannot be held.

Text is checked in ASCII before `schwifty` sees it: its patterns use `\\d`, which
also matches other scripts' digits.
"""

import re
import string
from functools import cache

import pycountry
from schwifty import BIC, IBAN, registry
from schwifty.exceptions import InvalidChecksumDigits, InvalidCountryCode, SchwiftyException

# ISO 4217 codes whose minor unit is not 2: amounts in them are not cents.
MINOR_UNITS_NOT_TWO = {
    **dict.fromkeys(
        ("BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV"),
        0,
    ),
    **dict.fromkeys(("XAF", "XOF", "XPF"), 0),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    **dict.fromkeys(("CLF", "UYW"), 4),
}
# ISO 4217 codes that name no money an account holds: precious metals, bond-market
# and accounting units, special drawing rights, the testing code and "no currency".
NOT_MONEY = frozenset(
    ("XAD", "XAG", "XAU", "XBA", "XBB", "XBC", "XBD", "XDR", "XPD", "XPT", "XSU", "XTS", "XUA", "XXX")
)
_CURRENCY_NAMES: dict[str, str] = {currency.alpha_3: currency.name for currency in pycountry.currencies}
SUPPORTED_CURRENCIES: tuple[str, ...] = tuple(
    sorted(_CURRENCY_NAMES.keys() - MINOR_UNITS_NOT_TWO.keys() - NOT_MONEY)
)
CURRENCY_CHOICES = [(code, f"{code} {_CURRENCY_NAMES[code]}") for code in SUPPORTED_CURRENCIES]

_CURRENCY_TEXT = re.compile(r"[A-Z]{3}")
_IBAN_TEXT = re.compile(r"[A-Z]{2}[0-9]{2}[A-Z0-9]+")
_BIC_TEXT = re.compile(r"[A-Z0-9]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?")
# schwifty's BBAN format letters: n digits, a capital letters, c letters or digits.
_FORMAT_WORDS = {"n": "digits", "a": "capital letters", "c": "letters or digits"}
_FORMAT_CLASSES = {"n": "[0-9]", "a": "[A-Za-z]", "c": "[A-Za-z0-9]"}
_FORMAT_PART = re.compile(r"([0-9]+)!([nac])")


def currency_problem(code: object) -> str | None:
    """Why `code` is not a currency the service supports, or None."""
    if not isinstance(code, str) or not _CURRENCY_TEXT.fullmatch(code):
        return "Must be an ISO 4217 currency code: three capital letters, e.g. GBP."
    if code in SUPPORTED_CURRENCIES:
        return None
    if code in MINOR_UNITS_NOT_TWO:
        return (
            f"{code} has {MINOR_UNITS_NOT_TWO[code]} decimal places; only currencies with 2 "
            "(such as GBP, EUR or USD) are supported."
        )
    if code in NOT_MONEY:
        return f"{code} is not a currency an account can hold."
    return f"{code} is not an ISO 4217 currency code."


def normalise_iban(value: str) -> str:
    """An IBAN as stored and compared: spaces and tabs (groups of four) removed, upper case."""
    return re.sub(r"[ \t]+", "", value).upper()


def normalise_bic(value: str) -> str:
    return value.upper()


def _format_words(bban_spec: str) -> str:
    return ", then ".join(f"{count} {_FORMAT_WORDS[kind]}" for count, kind in _FORMAT_PART.findall(bban_spec))


def iban_problem(value: object) -> str | None:
    """Why `value` (as sent: spaces, tabs and lower case allowed) is not an IBAN a
    bank would take, or None."""
    if not isinstance(value, str) or not value.strip(" \t"):
        return "Must be an IBAN, e.g. GB82WEST12345698765432."
    iban = normalise_iban(value)
    if not _IBAN_TEXT.fullmatch(iban):
        return (
            "Must be an IBAN: a country code, 2 check digits and the account number, in "
            "letters A-Z and digits 0-9 (spaces allowed), e.g. GB82WEST12345698765432."
        )
    country = iban[:2]
    try:
        spec = registry.get_iban_spec(country)
    except InvalidCountryCode:
        return f"{country} is not a country whose banks issue IBANs."
    if len(iban) != spec.iban_length:
        return f"A {country} IBAN has {spec.iban_length} characters; this one has {len(iban)}."
    try:
        IBAN(iban)
    except InvalidChecksumDigits:
        return "Its check digits are wrong (mod-97): a character is mistyped or missing."
    except SchwiftyException:
        return (
            f"A {country} IBAN has 2 check digits, then {_format_words(spec.bban_spec)}; this one does not."
        )
    return None


def registered_bics(iban: str) -> frozenset[str]:
    """The BICs the bank registry lists for a valid IBAN's bank code; empty where the
    IBAN's country has no registry or the registry does not list the bank."""
    parsed = IBAN(normalise_iban(iban))
    if parsed.country_code not in _registry_countries():
        return frozenset()
    lookup_key = "".join(getattr(parsed, component.value) for component in parsed.spec.bic_lookup_components)
    return frozenset(
        bank.bic for bank in registry.get_banks_by_code(parsed.country_code, lookup_key) if bank.bic
    )


@cache
def _registry_countries() -> frozenset[str]:
    return frozenset(registry.get_countries())


def bic_problem(bic: object, iban: str | None = None) -> str | None:
    """Why `bic` is not a BIC a bank would take (for a payment to `iban`, when
    given), or None. The IBAN is matched only when it is valid itself."""
    if not isinstance(bic, str) or not _BIC_TEXT.fullmatch(normalise_bic(bic)):
        return (
            "Must be a BIC of 8 or 11 letters and digits: 4 for the bank, the country "
            "code, 2 for the location and optionally 3 for the branch, e.g. DEUTDEFF."
        )
    code = normalise_bic(bic)
    try:
        BIC(code)
    except SchwiftyException:
        return f"{code[4:6]} (its 5th and 6th characters) is not a country code."
    if iban is None or iban_problem(iban) is not None:
        return None
    banks = {entry[:8] for entry in registered_bics(iban)}
    if banks and code[:8] not in banks:
        return (
            f"Is not the bank of the IBAN: the {normalise_iban(iban)[:2]} bank registry gives "
            f"{' or '.join(sorted(banks))} for its bank code."
        )
    return None


# The same rules for the OpenAPI document, on the text as sent. An IBAN: one
# country's length and account format, spaces or tabs allowed anywhere, either
# case; its check digits no pattern can state.
def _iban_country_pattern(country: str) -> str:
    spec = registry.get_iban_spec(country)
    letters = "".join(f"[{letter}{letter.lower()}][ \\t]*" for letter in country)
    parts = "".join(
        f"({_FORMAT_CLASSES[kind]}[ \\t]*){{{count}}}" for count, kind in _FORMAT_PART.findall(spec.bban_spec)
    )
    return f"{letters}([0-9][ \\t]*){{2}}{parts}"


def _iban_countries() -> list[str]:
    # Every two-letter code is asked: schwifty also knows codes outside ISO 3166
    # (XK, Kosovo).
    countries = []
    for code in (first + second for first in string.ascii_uppercase for second in string.ascii_uppercase):
        try:
            registry.get_iban_spec(code)
        except InvalidCountryCode:
            continue
        countries.append(code)
    return countries


IBAN_COUNTRIES: tuple[str, ...] = tuple(_iban_countries())
IBAN_PATTERN = "^[ \\t]*(" + "|".join(_iban_country_pattern(code) for code in IBAN_COUNTRIES) + ")$"
_BIC_COUNTRIES = "|".join(
    f"[{code[0]}{code[0].lower()}][{code[1]}{code[1].lower()}]"
    for code in sorted(country.alpha_2 for country in pycountry.countries)
)
BIC_PATTERN = f"^[A-Za-z0-9]{{4}}({_BIC_COUNTRIES})[A-Za-z0-9]{{2}}([A-Za-z0-9]{{3}})?$"
