"""Personal data with a checksum or a fixed form: payment cards (Luhn and a card network's prefix), IBANs (mod 97),
and national identity numbers, each validated by python-stdnum (a maintained library of number formats and their
check digits) where it has the format, by the issuer's published rule here where it has not.

A number is found by its written shape, then kept only if it validates: a 16-digit order number fails Luhn nine
times in ten and a card network's prefix rule most of the rest, a date-shaped run of 18 digits fails the Chinese
resident id's birth date and check digit. The shapes are the ones people write (groups and separators as printed
on the card or the document); where a format is bare digits that other numbers share, a label is required
("SSN 078051120", "BSN: 111222333", "身份证号 ...").

Locales: the ones Rearview's users write in first (United States, United Kingdom, China with Hong Kong and Taiwan),
then the largest others whose numbers carry a check (Canada, India, Brazil, Spain, Italy, France, Germany, the
Netherlands, Poland, Sweden, South Korea, Japan, Singapore, Mexico, Australia).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from stdnum import iban, luhn
from stdnum.au import tfn
from stdnum.br import cpf
from stdnum.ca import sin
from stdnum.cn import ric
from stdnum.de import idnr
from stdnum.es import dni, nie
from stdnum.fr import nir
from stdnum.in_ import aadhaar
from stdnum.it import codicefiscale
from stdnum.jp import in_ as my_number
from stdnum.kr import rrn
from stdnum.mx import curp
from stdnum.nl import bsn
from stdnum.pl import pesel
from stdnum.se import personnummer
from stdnum.us import ssn

from rearview.service.redaction.rules import ALNUM, DIGIT, Finding, PatternRule, Subject
from rearview.service.redaction.screen import Screen

Validator = Callable[[str], bool]


def _digits(value: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "", value)


def _card(value: str) -> bool:
    """13 to 19 digits, a known network's prefix (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro),
    and the Luhn check."""
    number = _digits(value)
    if not 13 <= len(number) <= 19 or not number.isdigit() or len(set(number)) < 2:
        return False
    prefix = int(number[:6])
    networks = (
        number[0] == "4",
        510000 <= prefix <= 559999 or 222100 <= prefix <= 272099,
        number[:2] in ("34", "37") and len(number) == 15,
        number[:4] == "6011" or number[:2] == "65" or 644000 <= prefix <= 649999,
        3528 <= int(number[:4]) <= 3589,
        number[:2] in ("36", "38", "39") or 300 <= int(number[:3]) <= 305,
        number[:2] == "62",
        number[:2] in ("50", "56", "57", "58", "67"),
    )
    return any(networks) and luhn.is_valid(number)


_NINO_BAD_PREFIXES = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})


def _uk_nino(value: str) -> bool:
    """HMRC's rules: two prefix letters (not D, F, I, Q, U or V; the second not O; not BG GB KN NK NT TN ZZ), six
    digits, suffix A to D. (python-stdnum has no NINO.)"""
    code = _digits(value).upper()
    if not re.fullmatch(r"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\d{6}[A-D]", code):
        return False
    return code[:2] not in _NINO_BAD_PREFIXES


def _sg_nric(value: str) -> bool:
    """Singapore NRIC/FIN: weights 2765432 over the digits, offset by the prefix, mapped to a check letter."""
    code = value.upper()
    weights = (2, 7, 6, 5, 4, 3, 2)
    total = sum(int(d) * w for d, w in zip(code[1:8], weights, strict=True))
    total += {"S": 0, "T": 4, "F": 0, "G": 4, "M": 3}[code[0]]
    letters = "JZIHGFEDCBA" if code[0] in "ST" else ("XWUTRQPNMLK" if code[0] in "FG" else "KLJNPQRTUWX")
    return letters[total % 11] == code[8]


def _hk_id(value: str) -> bool:
    """Hong Kong identity card: one or two letters, six digits, a check digit (0-9 or A) by weights 9..2 mod 11."""
    code = re.sub(r"[()\s]", "", value.upper())
    letters, digits, check = code[:-7], code[-7:-1], code[-1]
    padded = ([36] if len(letters) == 1 else []) + [ord(c) - 55 for c in letters]
    values = padded + [int(d) for d in digits]
    total = sum(v * w for v, w in zip(values, range(9, 1, -1), strict=True))
    expected = (11 - total % 11) % 11
    return check == ("A" if expected == 10 else str(expected))


def _tw_id(value: str) -> bool:
    """Taiwan national identification number: a letter (its two-digit code), 1 or 2, eight digits; weighted mod 10."""
    code = value.upper()
    area = "ABCDEFGHJKLMNPQRSTUVXYWZIO".index(code[0]) + 10
    digits = [area // 10, area % 10, *(int(d) for d in code[1:])]
    weights = (1, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1)
    return sum(d * w for d, w in zip(digits, weights, strict=True)) % 10 == 0


def _stdnum(module: object) -> Validator:
    check = module.is_valid  # type: ignore[attr-defined]

    def valid(value: str) -> bool:
        try:
            return bool(check(value))
        except Exception:  # a library's own surprise is a number we do not redact, never a failed write
            return False

    return valid


def _number(kind: str, pattern: str, valid: Validator, *, group: int = 0, bounded: bool = True) -> PatternRule:
    """A number rule: every match holds a digit; `bounded`: no letter or digit may touch the match."""
    edges = ALNUM if bounded else frozenset()
    return PatternRule(kind, pattern, (DIGIT,), group=group, accept=valid, not_before=edges, not_after=edges)


def _card_shapes() -> str:
    """How card numbers are written: 13 to 19 digits in a row, or in groups of four (the last shorter) or 4-6-5
    (American Express, Diners), grouped by spaces, hyphens or dots, one kind per number."""
    grouped = [
        rf"\d{{4}}{s}\d{{4}}{s}\d{{4}}{s}\d{{1,4}}(?:{s}\d{{1,3}})?|\d{{4}}{s}\d{{6}}{s}\d{{4,5}}"
        for s in (" ", "-", r"\.")
    ]
    return "|".join([r"\d{13,19}", *grouped])


_LABEL_GAP = r"(?:\s*(?:number|no\.?|num|#|nr\.?|号码?|號碼?)?\s*(?:is|was|:|：|=|是|为|は)?\s*)"
_SEP = r"[ -]"  # how people group the digits of a number: spaces or hyphens

# Earlier rules win overlaps: a resident id's 18 digits are a resident id before they are a card number.
NUMBER_RULES: tuple[PatternRule, ...] = (
    # 18 digits, or written in groups of 6-8-4 or 6-4-4-4 ("110105 19491231 002X").
    _number(
        "cn_resident_id",
        r"\d{6}" + _SEP + r"?(?:19|20)\d{2}" + _SEP + r"?[01]\d[0-3]\d" + _SEP + r"?\d{3}[\dXx]",
        lambda value: _stdnum(ric)(_digits(value)),
    ),
    _number("us_ssn", r"\d{3}-\d{2}-\d{4}|\d{3} \d{2} \d{4}", _stdnum(ssn)),
    _number(
        "us_ssn",
        r"(?i)\b(?:SSN|social\s+security)" + _LABEL_GAP + r"(\d{9}|\d{3}-\d{2}-\d{4})\b",
        _stdnum(ssn),
        group=1,
        bounded=False,
    ),
    _number("uk_nino", r"\b[A-Z]{2}\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b", _uk_nino, bounded=False),
    # Grouped by spaces, hyphens or dots ("4111.1111.1111.1111").
    _number("payment_card", _card_shapes(), _card),
    _number("iban", r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}\b", _stdnum(iban), bounded=False),
    _number("ca_sin", r"\d{3}-\d{3}-\d{3}|\d{3} \d{3} \d{3}", _stdnum(sin)),
    _number("in_aadhaar", r"[2-9]\d{3}-\d{4}-\d{4}|[2-9]\d{3} \d{4} \d{4}", _stdnum(aadhaar)),
    _number(
        "jp_my_number",
        r"(?i)(?:マイナンバー|個人番号|My\s*Number)" + _LABEL_GAP + r"(\d{4}[- ]?\d{4}[- ]?\d{4})",
        _stdnum(my_number),
        group=1,
        bounded=False,
    ),
    _number("br_cpf", r"\d{3}\.\d{3}\.\d{3}-\d{2}|\d{3} \d{3} \d{3} \d{2}", _stdnum(cpf)),
    _number("es_dni", r"\d{8}[ -]?[A-Z]", _stdnum(dni)),
    _number("es_nie", r"\b[XYZ]-?\d{7}-?[A-Z]\b", _stdnum(nie), bounded=False),
    _number(
        "it_codice_fiscale", r"\b[A-Z]{6}\d{2}[A-EHLMPR-T]\d{2}[A-Z]\d{3}[A-Z]\b", _stdnum(codicefiscale), bounded=False
    ),
    _number("fr_nir", r"[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}", _stdnum(nir)),
    _number(
        "de_tax_id",
        r"(?i)(?:Steuer-?ID|Steueridentifikationsnummer|IdNr|tax\s+id)" + _LABEL_GAP + r"(\d{11})\b",
        _stdnum(idnr),
        group=1,
        bounded=False,
    ),
    _number(
        "nl_bsn",
        r"(?i)\b(?:BSN|burgerservicenummer)" + _LABEL_GAP + r"(\d{8,9})\b",
        _stdnum(bsn),
        group=1,
        bounded=False,
    ),
    _number("pl_pesel", r"(?i)\bPESEL" + _LABEL_GAP + r"(\d{11})\b", _stdnum(pesel), group=1, bounded=False),
    _number("se_personnummer", r"(?:19|20)?\d{6}[-+]\d{4}", _stdnum(personnummer)),
    _number("kr_resident_id", r"\d{6}[- ][1-8]\d{6}", lambda value: _stdnum(rrn)(value.replace(" ", "-"))),
    _number("mx_curp", r"\b[A-Z]{4}\d{6}[HM][A-Z]{5}[0-9A-Z]\d\b", _stdnum(curp), bounded=False),
    _number(
        "au_tfn",
        r"(?i)\b(?:TFN|tax\s+file)" + _LABEL_GAP + r"(\d{3} ?\d{3} ?\d{2,3})\b",
        _stdnum(tfn),
        group=1,
        bounded=False,
    ),
    _number("sg_nric", r"\b[STFGM]\d{7}[A-Z]\b", _sg_nric, bounded=False),
    _number("hk_identity_card", r"\b[A-Z]{1,2}\d{6}\s?\([0-9A]\)", _hk_id, bounded=False),
    _number("tw_national_id", r"\b[A-Z][12]\d{8}\b", _tw_id, bounded=False),
    # No check digit: the label says what it is.
    _number(
        "passport_number",
        r"(?i)(?:\bpassport|护照|護照|パスポート)" + _LABEL_GAP + r"([A-Z0-9]{6,9})\b",
        lambda value: any(c.isdigit() for c in value),
        group=1,
        bounded=False,
    ),
    _number(
        "drivers_licence",
        r"(?i)\bdriver'?s?\s+licen[cs]e" + _LABEL_GAP + r"([A-Z0-9-]{5,20})\b",
        lambda value: sum(c.isdigit() for c in value) >= 4,
        group=1,
        bounded=False,
    ),
)


PERSONAL_SCREEN = Screen(NUMBER_RULES)


def personal_findings(text: Subject | str, screened: bool = True) -> Iterator[Finding]:
    """Every personal number found in `text`; `screened=False` runs every rule (the screen's reference)."""
    subject = Subject(text) if isinstance(text, str) else text
    for each in PERSONAL_SCREEN.candidates(subject.text, subject.data) if screened else PERSONAL_SCREEN.rules:
        yield from each.findings(subject)
