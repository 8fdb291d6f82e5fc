"""A labelled corpus of secrets and personal numbers, for measuring redaction (bench/redaction.py).

Every value is synthetic, made here from a fixed seed: credentials are random strings in each vendor's published
format (none was ever issued), and every number with a check digit gets a valid one, computed with python-stdnum
or the issuer's published rule (so a detector that validates checksums is tested fairly). Each item is a sentence
an agent might be told, in English or Chinese, holding one value; some are written as people obfuscate them
(split by zero-width spaces, in full-width characters, inside a URL, in words). `corpus()` returns the same items
on every run.

`hardening_corpus()` holds the forms a red-team pass found missed (issue 40: vendor keys split by spaces or written
with Cyrillic look-alikes, card numbers grouped by dots, "the password for X is ...", national ids written in
groups without a label, short base64), from a seed of its own so the items above stay as they are, and
`clean_corpus()` the sentences that must come back unchanged (the over-redactions it found: "the password is
expired"), each labelled with what it tests.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass

from stdnum import luhn, verhoeff
from stdnum.br import cpf
from stdnum.cn import ric
from stdnum.es import dni
from stdnum.fr import nir
from stdnum.iban import calc_check_digits as iban_check
from stdnum.it import codicefiscale
from stdnum.jp import in_ as my_number
from stdnum.kr import rrn
from stdnum.mx import curp
from stdnum.nl import bsn
from stdnum.pl import pesel
from stdnum.se import personnummer

SEED = 18
PER_TYPE = 6


@dataclass(frozen=True)
class Item:
    kind: str  # the type of secret (the corpus's label, not a detector's kind name)
    family: str  # "secret" or "pii"
    value: str  # the characters that must not survive redaction
    text: str  # the sentence holding it


ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def _chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _mixed(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    """Random characters with at least one upper, lower and digit (as real tokens have)."""
    while True:
        value = _chars(rng, alphabet, n)
        if any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value):
            return value


def _luhn_number(rng: random.Random, prefix: str, length: int) -> str:
    body = prefix + _chars(rng, string.digits, length - len(prefix) - 1)
    return body + luhn.calc_check_digit(body)


def _group(number: str, sizes: tuple[int, ...], sep: str = " ") -> str:
    parts, start = [], 0
    for size in sizes:
        parts.append(number[start : start + size])
        start += size
    return sep.join(parts)


# --- credentials ----------------------------------------------------------------------------------------------

SECRETS: dict[str, Callable[[random.Random], str]] = {
    "aws_access_key": lambda r: "AKIA" + _chars(r, string.ascii_uppercase + string.digits, 16),
    "aws_secret_labelled": lambda r: _mixed(r, 40, ALNUM + "/+"),
    "aws_secret_unlabelled": lambda r: _mixed(r, 40, ALNUM + "/+"),
    "github_pat": lambda r: "ghp_" + _mixed(r, 36),
    "github_fine_grained": lambda r: "github_pat_" + _mixed(r, 22) + "_" + _mixed(r, 59),
    "gitlab_pat": lambda r: "glpat-" + _mixed(r, 20),
    "slack_bot_token": lambda r: f"xoxb-{_chars(r, string.digits, 11)}-{_chars(r, string.digits, 12)}-{_mixed(r, 24)}",
    "slack_webhook": lambda r: (
        f"T{_chars(r, string.ascii_uppercase + string.digits, 8)}"
        f"/B{_chars(r, string.ascii_uppercase + string.digits, 8)}/{_mixed(r, 24)}"
    ),
    "stripe_secret": lambda r: "sk_live_" + _mixed(r, 24),
    "stripe_restricted": lambda r: "rk_live_" + _mixed(r, 24),
    "npm_token": lambda r: "npm_" + _mixed(r, 36),
    "pypi_token": lambda r: "pypi-AgEIcHlwaS5vcmc" + _mixed(r, 60, ALNUM + "-_"),
    "twilio_api_key": lambda r: "SK" + _chars(r, HEX, 32),
    "azure_storage_key": lambda r: _mixed(r, 86, ALNUM + "+/") + "==",
    "azure_client_secret": lambda r: (
        _chars(r, ALNUM, 3) + r.choice(string.digits) + "Q~" + _mixed(r, 34, ALNUM + "_~.")
    ),
    "sendgrid_key": lambda r: f"SG.{_mixed(r, 22)}.{_mixed(r, 43)}",
    "openai_key": lambda r: "sk-proj-" + _mixed(r, 48),
    "anthropic_key": lambda r: "sk-ant-api03-" + _mixed(r, 80, ALNUM + "-_"),
    "google_api_key": lambda r: "AIza" + _mixed(r, 35, ALNUM + "-_"),
    "huggingface_token": lambda r: "hf_" + _mixed(r, 34),
    "telegram_bot_token": lambda r: f"{_chars(r, string.digits, 10)}:AA{_mixed(r, 33, ALNUM + '_-')}",
    "jwt": lambda r: f"eyJhbGciOiJIUzI1NiJ9.eyJ{_mixed(r, 40)}.{_mixed(r, 43, ALNUM + '-_')}",
    "bearer_alnum": lambda r: _mixed(r, 32) + "." + _mixed(r, 12),
    "bearer_letters_only": lambda r: _chars(r, string.ascii_letters, 40),
    "url_password": lambda r: _mixed(r, 12),
    "url_password_with_at": lambda r: _mixed(r, 6) + "@" + _mixed(r, 6),
    "password_labelled": lambda r: _mixed(r, 10) + "!",
    "password_in_words": lambda r: _mixed(r, 9),
    "password_chinese": lambda r: _mixed(r, 10),
    "private_key_pem": lambda r: _mixed(r, 64, ALNUM + "+/"),
    "rearview_api_key": lambda r: f"rv_{_chars(r, HEX, 16)}_{_mixed(r, 43, ALNUM + '-_')}",
    "zero_width_split": lambda r: "AKIA" + _chars(r, string.ascii_uppercase + string.digits, 16),
    "full_width": lambda r: "sk_live_" + _mixed(r, 24),
}


# Where a secret is said with its label or in its context; the others go into one of the plain templates.
SECRET_TEMPLATES: dict[str, str] = {
    "aws_secret_labelled": "export AWS_SECRET_ACCESS_KEY={} before running the deploy",
    "aws_secret_unlabelled": "the prod key is {}, rotate it next week",
    "bearer_alnum": "call it with Authorization: Bearer {} and a JSON body",
    "bearer_letters_only": "call it with Authorization: Bearer {} and a JSON body",
    "url_password": "the staging db is postgres://deploy:{}@db.internal.example:5432/app",
    "url_password_with_at": "the staging db is postgres://deploy:{}@db.internal.example:5432/app",
    "password_labelled": "wifi at the office: SSID guest, password: {}",
    "password_in_words": "remember that my bank password is {} for next time",
    "password_chinese": "记住，我的邮箱密码是{}，别告诉别人",
    "private_key_pem": "here is the deploy key:\n-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
    "slack_webhook": "alerts go to https://hooks.slack.com/services/{} from now on",
    "azure_storage_key": "DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={};EndpointSuffix=core",
    "zero_width_split": "the access key is {} (copied from the console)",
    "full_width": "支付密钥 {} 请保存",
}
PLAIN_TEMPLATES = (
    "please use {} for the integration",
    "I stored the token {} in the vault yesterday",
    "我把密钥 {} 放在配置里了",
    "the CI variable is set to {} now",
)


def _as_written(kind: str, value: str) -> str:
    """The value as people obfuscate it: split by zero-width characters, or in full-width forms."""
    if kind == "zero_width_split":
        return value[:4] + "\u200b" + value[4:10] + "\u200d" + value[10:]
    if kind == "full_width":
        return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in value)
    return value


def _secret_text(kind: str, value: str, rng: random.Random) -> tuple[str, str]:
    """(sentence, the characters of the value as written in it)."""
    written = _as_written(kind, value)
    template = SECRET_TEMPLATES.get(kind) or rng.choice(PLAIN_TEMPLATES)
    return template.format(written), written


# --- personal numbers -----------------------------------------------------------------------------------------


def _card(rng: random.Random) -> str:
    prefix, length, groups = rng.choice(
        [
            ("4", 16, (4, 4, 4, 4)),
            ("51", 16, (4, 4, 4, 4)),
            ("2221", 16, (4, 4, 4, 4)),
            ("37", 15, (4, 6, 5)),
            ("6011", 16, (4, 4, 4, 4)),
            ("3530", 16, (4, 4, 4, 4)),
        ]  # fmt: skip
    )
    return _group(_luhn_number(rng, prefix, length), groups, rng.choice([" ", "-", ""]))


def _iban(rng: random.Random) -> str:
    country, bban = rng.choice(
        [
            ("DE", _chars(rng, string.digits, 18)),
            ("GB", "NWBK" + _chars(rng, string.digits, 14)),
            ("NL", "ABNA" + _chars(rng, string.digits, 10)),
        ]
    )
    number = country + iban_check(country + "00" + bban) + bban
    return " ".join(number[i : i + 4] for i in range(0, len(number), 4)) if rng.random() < 0.5 else number


def _ssn(rng: random.Random) -> str:
    area = rng.choice([n for n in range(1, 900) if n != 666])
    return f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"


def _nino(rng: random.Random) -> str:
    first, second = rng.choice("ABCEGHJKLMNPRSTWXYZ"), rng.choice("ABCEGHJKLMNPRSTWXYZ")
    return f"{first}{second}{_chars(rng, string.digits, 6)}{rng.choice('ABCD')}"


def _cn_ric(rng: random.Random) -> str:
    while True:
        body = rng.choice(["110105", "310104", "440305", "510107"]) + (
            f"{rng.randint(1950, 2005)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{_chars(rng, string.digits, 3)}"
        )
        number = body + ric.calc_check_digit(body + "0")  # it takes the number with a check digit in place
        if ric.is_valid(number):  # the birth place must have existed on the birth date, too
            return number


def _ca_sin(rng: random.Random) -> str:
    return _group(_luhn_number(rng, rng.choice("1234567"), 9), (3, 3, 3), "-")


def _aadhaar(rng: random.Random) -> str:
    while True:
        body = rng.choice("23456789") + _chars(rng, string.digits, 10)
        number = body + verhoeff.calc_check_digit(body)
        if number != number[::-1]:
            return _group(number, (4, 4, 4))


def _completed(base: str, valid: Callable[[str], bool], digits: int) -> str | None:
    """`base` with the check digits that make it valid (tried in turn: the library offers no calculator)."""
    for check in range(10**digits):
        if valid(number := base + f"{check:0{digits}d}"):
            return number
    return None


def _cpf(rng: random.Random) -> str:
    while (number := _completed(_chars(rng, string.digits, 9), cpf.is_valid, 2)) is None:
        pass
    return str(cpf.format(number))


def _dni(rng: random.Random) -> str:
    body = _chars(rng, string.digits, 8)
    return body + dni.calc_check_digit(body)


def _codice_fiscale(rng: random.Random) -> str:
    body = (
        _chars(rng, string.ascii_uppercase, 6)
        + f"{rng.randint(50, 99)}"
        + rng.choice("ABCDEHLMPRST")
        + f"{rng.randint(1, 28):02d}"
        + rng.choice("ABCDEFGHIL")
        + _chars(rng, string.digits, 3)
    )
    return body + codicefiscale.calc_check_digit(body)


def _nir(rng: random.Random) -> str:
    body = f"{rng.choice('12')}{rng.randint(50, 99)}{rng.randint(1, 12):02d}{rng.randint(1, 95):02d}" + (
        f"{rng.randint(1, 990):03d}{rng.randint(1, 999):03d}"
    )
    return body + nir.calc_check_digits(body)


def _rrn(rng: random.Random) -> str:
    while True:
        body = f"{rng.randint(70, 99)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{rng.choice('12')}" + (
            _chars(rng, string.digits, 5)
        )
        number = body + rrn.calc_check_digit(body)
        if rrn.is_valid(number):
            return number[:6] + "-" + number[6:]


def _my_number(rng: random.Random) -> str:
    body = _chars(rng, string.digits, 11)
    return _group(body + my_number.calc_check_digit(body), (4, 4, 4))


def _sg_nric(rng: random.Random) -> str:
    prefix = rng.choice("ST")
    digits = _chars(rng, string.digits, 7)
    total = sum(int(d) * w for d, w in zip(digits, (2, 7, 6, 5, 4, 3, 2), strict=True)) + (4 if prefix == "T" else 0)
    return prefix + digits + "JZIHGFEDCBA"[total % 11]


def _curp(rng: random.Random) -> str:
    while True:
        body = (
            _chars(rng, "BCDFGHJKLMNPRSTVWXZ", 1) + rng.choice("AEIOU") + _chars(rng, "BCDFGHJKLMNPRSTVWXZ", 2)
            + f"{rng.randint(50, 99)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}" + rng.choice("HM")
            + rng.choice(["DF", "JC", "NL", "PL", "VZ"]) + _chars(rng, "BCDFGHJKLMNPRSTVWXZ", 3) + "0"
        )  # fmt: skip
        number = body + curp.calc_check_digit(body)
        if curp.is_valid(number):
            return number


def _personnummer(rng: random.Random) -> str:
    body = f"{rng.randint(50, 99)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{_chars(rng, string.digits, 3)}"
    number = body + luhn.calc_check_digit(body)
    assert personnummer.is_valid(number[:6] + "-" + number[6:])
    return number[:6] + "-" + number[6:]


def _pesel(rng: random.Random) -> str:
    while True:
        body = f"{rng.randint(50, 99)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{_chars(rng, string.digits, 4)}"
        number = body + pesel.calc_check_digit(body)
        if pesel.is_valid(number):
            return number


def _bsn(rng: random.Random) -> str:
    while (number := _completed(_chars(rng, "123456789", 1) + _chars(rng, string.digits, 7), bsn.is_valid, 1)) is None:
        pass
    return number


def _hk_id(rng: random.Random) -> str:
    letter, digits = rng.choice(string.ascii_uppercase), _chars(rng, string.digits, 6)
    values = [36, ord(letter) - 55, *(int(d) for d in digits)]
    check = (11 - sum(v * w for v, w in zip(values, range(9, 1, -1), strict=True)) % 11) % 11
    return f"{letter}{digits}({'A' if check == 10 else check})"


def _tw_id(rng: random.Random) -> str:
    letter = rng.choice("ABCDEFGHJKLMNPQRSTUVXYWZIO")
    area = "ABCDEFGHJKLMNPQRSTUVXYWZIO".index(letter) + 10
    body = rng.choice("12") + _chars(rng, string.digits, 7)
    digits = [area // 10, area % 10, *(int(d) for d in body)]
    total = sum(d * w for d, w in zip(digits, (1, 9, 8, 7, 6, 5, 4, 3, 2, 1), strict=True))
    return letter + body + str((10 - total % 10) % 10)


PERSONAL: dict[str, tuple[Callable[[random.Random], str], tuple[str, ...]]] = {
    "payment_card": (_card, ("charge it to my card {}, expiry 04/29", "我的信用卡号是 {}")),
    "iban": (_iban, ("wire the deposit to IBAN {} by Friday", "refund to account {} please")),
    "us_ssn": (_ssn, ("my social security number is {}", "SSN {} for the tax form")),
    "uk_nino": (_nino, ("my National Insurance number is {}", "NI number {} on the payslip")),
    "cn_resident_id": (_cn_ric, ("我的身份证号是{}，订票要用", "ID card {} for the train ticket")),
    "ca_sin": (_ca_sin, ("SIN {} for the payroll form", "my social insurance number is {}")),
    "in_aadhaar": (_aadhaar, ("Aadhaar {} for the KYC", "my aadhaar number is {}")),
    "br_cpf": (_cpf, ("meu CPF é {}", "CPF {} for the invoice")),
    "es_dni": (_dni, ("mi DNI es {}", "DNI {} for the hotel check-in")),
    "it_codice_fiscale": (_codice_fiscale, ("codice fiscale {} per la fattura", "my tax code is {}")),
    "fr_nir": (_nir, ("numéro de sécurité sociale {}", "NIR {} on the carte vitale")),
    "kr_resident_id": (_rrn, ("주민등록번호 {}", "resident registration number {}")),
    "jp_my_number": (_my_number, ("マイナンバーは{}です", "My Number {} for the bank")),
    "sg_nric": (_sg_nric, ("NRIC {} for the condo booking", "my IC is {}")),
    "mx_curp": (_curp, ("mi CURP es {}", "CURP {} for the visa form")),
    "se_personnummer": (_personnummer, ("personnummer {}", "my Swedish ID is {}")),
    "pl_pesel": (_pesel, ("PESEL {} do formularza", "my PESEL: {}")),
    "nl_bsn": (_bsn, ("mijn BSN is {}", "BSN: {} for the tax office")),
    "hk_identity_card": (_hk_id, ("香港身份證 {}", "HKID {} for the bank")),
    "tw_national_id": (_tw_id, ("身分證字號 {}", "Taiwan ID {} for the form")),
    "passport_number": (
        lambda r: r.choice(string.ascii_uppercase) + _chars(r, string.digits, 8),
        ("my passport number is {}", "护照号 {} 用来订机票"),
    ),
}


def corpus(per_type: int = PER_TYPE, seed: int = SEED) -> list[Item]:
    """The labelled items: `per_type` of each secret and personal type, the same on every run."""
    rng = random.Random(seed)
    items: list[Item] = []
    for kind, make in SECRETS.items():
        for _ in range(per_type):
            text, written = _secret_text(kind, make(rng), rng)
            items.append(Item(kind, "secret", written, text))
    for kind, (make_number, templates) in PERSONAL.items():
        for i in range(per_type):
            value = make_number(rng)
            items.append(Item(kind, "pii", value, templates[i % len(templates)].format(value)))
    return items


# --- issue 40: the forms found missed, and sentences that must stay ----------------------------------------------

HARDENING_SEED = 40
_CYRILLIC = {"A": "\u0410", "K": "\u041a", "p": "\u0440", "s": "\u0455", "e": "\u0435", "o": "\u043e"}


def _split(value: str, rng: random.Random) -> str:
    """The value in chunks of 3 to 6 characters joined by single spaces."""
    chunks, at = [], 0
    while at < len(value):
        size = rng.randint(3, 6)
        chunks.append(value[at : at + size])
        at += size
    return " ".join(chunks)


def _lookalike(value: str) -> str:
    return "".join(_CYRILLIC.get(c, c) for c in value)


def _base64(rng: random.Random) -> str:
    import base64

    while True:
        raw = bytes(rng.randrange(256) for _ in range(rng.choice([10, 11, 13, 14, 16, 17, 19, 20])))
        value = base64.b64encode(raw).decode("ascii")
        if any(c.isupper() for c in value) and any(c.islower() for c in value):
            return value


def _spaced_id(rng: random.Random) -> str:
    kind = rng.choice(["cn", "kr", "es", "br"])
    if kind == "cn":
        number = _cn_ric(rng)
        return f"{number[:6]} {number[6:14]} {number[14:]}"
    if kind == "kr":
        return _rrn(rng).replace("-", " ")
    if kind == "es":
        number = _dni(rng)
        return f"{number[:8]} {number[8:]}"
    digits = "".join(c for c in _cpf(rng) if c.isdigit())
    return f"{digits[:3]} {digits[3:6]} {digits[6:9]} {digits[9:]}"


HARDENING: dict[str, tuple[str, Callable[[random.Random], str], tuple[str, ...]]] = {
    "split_by_spaces": (
        "secret",
        lambda r: _split(
            r.choice(
                [
                    SECRETS["aws_access_key"],
                    SECRETS["stripe_secret"],
                    SECRETS["github_pat"],
                    SECRETS["openai_key"],
                    SECRETS["slack_bot_token"],
                ]
            )(r),
            r,
        ),
        ("the key is {} (typed from the screen)", "paste {} into the config", "token: {}"),
    ),  # fmt: skip
    "cyrillic_lookalike": (
        "secret",
        lambda r: _lookalike(r.choice([SECRETS["aws_access_key"], SECRETS["stripe_secret"], SECRETS["github_pat"]])(r)),
        ("please use {} for the integration", "I stored the token {} in the vault yesterday"),
    ),
    "card_with_dots": (
        "pii",
        lambda r: _group(_luhn_number(r, r.choice(["4", "51", "6011"]), 16), (4, 4, 4, 4), "."),
        ("charge it to my card {}, expiry 04/29", "card number {} for the booking"),
    ),
    "password_for_something": (
        "secret",
        lambda r: _mixed(r, 10) + r.choice(["", "!", "#"]),
        (
            "the password for the router is {}",
            "my password for gmail is {}.",
            "the wifi password for the office was {}",
        ),
    ),
    "spaced_national_id": (
        "pii",
        _spaced_id,
        ("{} is on the form", "here it is: {}", "write {} in the box"),
    ),
    "short_base64": (
        "secret",
        _base64,
        ("the value was {} in the header", "my token is {}", "set it to {} and restart"),
    ),
}


def hardening_corpus(per_type: int = PER_TYPE, seed: int = HARDENING_SEED) -> list[Item]:
    """The forms issue 40 found missed: `per_type` of each, the same on every run."""
    rng = random.Random(seed)
    items: list[Item] = []
    for kind, (family, make, templates) in HARDENING.items():
        for i in range(per_type):
            value = make(rng)
            items.append(Item(kind, family, value, templates[i % len(templates)].format(value)))
    return items


# Sentences that hold a word redaction looks for and nothing to hide: each must come back unchanged.
CLEAN: dict[str, tuple[str, ...]] = {
    "password_state": (
        "the password is expired",
        "the password is expired.",
        "The password is expired!",
        "my password was changed yesterday.",
        "the password for the wifi is on the fridge",
        "the PIN is required at the door",
        "my passcode was reset",
    ),
    "labels_in_prose": (
        "the key is in the drawer",
        "the token is valid for an hour",
        "my secret is safe with you",
        "I noticed a spiderman pin on your purse. Is Spider-Man your favorite superhero?",
        "the bearer of bad tidings arrived late",
        "the api key is rotated every Sunday",
    ),
    "numbers_in_prose": (
        "version 1.2.3.4 of the app shipped",
        "we met at 10.30 on 12.04.2024",
        "room 4111, floor 2, call 555 0100",
        "a == b when both are 1.0",
        "the score was 3-2 after 90 minutes",
    ),
    "scripts": (
        "Привет, как дела? Встречаемся в 10 часов.",
        "Καλημέρα, τα λέμε αύριο στις 9.",
        "我们下周三在上海见面，地址是南京路 100 号",
    ),
}


def clean_corpus() -> list[Item]:
    """The sentences that must stay as they are (value "": nothing to hide)."""
    return [Item(kind, "clean", "", text) for kind, texts in CLEAN.items() for text in texts]
