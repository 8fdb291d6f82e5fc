"""Credentials: our own rules for what agents' conversations hold (keys in prose, labelled and unlabelled, passwords
said in words), and the vendor patterns detect-secrets maintains (Yelp's scanner: AWS, Azure, Stripe, Twilio, npm,
PyPI, SendGrid, Telegram, Discord, Mailchimp, IBM, Artifactory ...), which we read as its `RegexBasedDetector`
plugins' own pattern lists so that each finding has a place in the text to replace.

Each rule gives a kind and the span of the secret; a label around it ("Bearer ", "password=") stays, so the memory
still says what was there. Every rule runs on RE2 (`rearview.service.redaction.rules`): linear in the text whatever
it holds.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from functools import cache

import re2

from rearview.service.redaction.rules import ALNUM, DIGIT, LETTERS, WORD, Finding, PatternRule, Subject
from rearview.service.redaction.screen import Screen

logger = logging.getLogger(__name__)

_PASSWORD_SYMBOLS = frozenset("!@#$%^&*()_+=[]{}|;:,.<>?/~`\\-")
# What ends a sentence after a password said in words ("my password is hunter2."): not part of it.
_SENTENCE_END = ".,;:?)]}>\"'”’"


def passwordish(value: str) -> bool:
    """A value that looks like a password rather than a word: a digit or a symbol in it, or both cases past the
    first character ("expired" and "Tuesday" are words; "hunter2", "Tr0ub4dor&3" and "tRoubadour" are not)."""
    if len(value) < 4:
        return False
    if any(c.isdigit() or c in _PASSWORD_SYMBOLS for c in value):
        return True
    lower = next((i for i, c in enumerate(value) if c.islower()), None)
    return lower is not None and any(c.isupper() for c in value[lower + 1 :])


def _said_password(value: str) -> bool:
    # A final "!" may belong to the password; the sentence's own "!" ("the password is expired!") does not make a
    # word one.
    return passwordish(value.rstrip("!"))


def _bearer(value: str) -> bool:
    """A bearer credential has a digit or a symbol in it, or is one long word no language has ("the bearer of bad
    tidings" stays)."""
    return any(c.isdigit() or c in "._~+/-" for c in value) or (len(value) >= 24 and value.isalpha())


def _base64_padded(value: str) -> bool:
    """Padded base64 of a secret: a multiple of four characters, both cases (a sum written `x==y` has neither)."""
    return len(value) % 4 == 0 and any(c.isupper() for c in value) and any(c.islower() for c in value)


def _token_like(value: str) -> bool:
    """A value after a generic label ("token: ...", "secret is ...") that is no word: letters of both cases and a
    digit, or padded base64."""
    core = value.rstrip("=")
    mixed = any(c.isupper() for c in core) and any(c.islower() for c in core) and any(c.isdigit() for c in core)
    return mixed or (value != core and _base64_padded(value))


_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/+_-")
_BASE64 = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=_-")
_AZURE_SECRET = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_~.-")

# Order matters where spans overlap: the earlier rule's finding is kept (a PEM block whole, before a token rule
# could take a piece of it; a labelled key before the generic high-entropy rule).
OUR_RULES: tuple[PatternRule, ...] = (
    PatternRule(
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        # A key cut off before its END line is still a key: mask to the end of the text.
        r"(?s:.)*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\z)",
        ("private key",),
    ),
    PatternRule("age_secret_key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b", ("age-secret-key-1",)),
    PatternRule(
        "bearer_token",
        r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)",
        ("bearer",),
        group=1,
        accept=_bearer,
        not_after=ALNUM,
    ),
    PatternRule("jwt", r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*", ("eyj",), splittable=True),
    PatternRule(
        "aws_access_key",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
        ("akia", "asia", "abia", "acca", "a3t"),
        splittable=True,
    ),
    PatternRule(
        "aws_secret_key",
        r"(?i)\b(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{30,})",
        ("secret",),
        group=1,
    ),
    PatternRule("anthropic_api_key", r"\bsk-ant-[A-Za-z0-9_-]{20,}", ("sk-ant-",), splittable=True),
    PatternRule("stripe_key", r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}", ("_live_", "_test_"), splittable=True),
    PatternRule("openai_api_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", ("sk-",), splittable=True),
    PatternRule(
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        splittable=True,
    ),
    PatternRule("slack_token", r"\bxox[bpaers]-[A-Za-z0-9-]{10,}", ("xox",), splittable=True),
    PatternRule(
        "slack_webhook",
        r"hooks\.slack\.com/(?:services|workflows)/([A-Za-z0-9_/-]{20,})",
        ("hooks.slack.com",),
        group=1,
    ),
    PatternRule("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}", ("aiza",), splittable=True),
    PatternRule(
        "gitlab_token",
        r"\bgl(?:pat|dt|ptt|rt|soat)-[A-Za-z0-9_-]{20,}",
        ("glpat-", "gldt-", "glptt-", "glrt-", "glsoat-"),
        splittable=True,
    ),
    PatternRule("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", ("npm_",), splittable=True),
    PatternRule("pypi_token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}", ("pypi-age",), splittable=True),
    PatternRule("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}\b", ("hf_",), splittable=True),
    PatternRule("twilio_key", r"\b(?:SK|AC)[0-9a-fA-F]{32}\b", ("sk", "ac")),
    PatternRule("sendgrid_key", r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}", ("sg.",), splittable=True),
    PatternRule("mailgun_key", r"\bkey-[0-9a-f]{32}\b", ("key-",), splittable=True),
    PatternRule(
        "shopify_token",
        r"\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}\b",
        ("shpat_", "shpca_", "shppa_", "shpss_"),
        splittable=True,
    ),
    PatternRule("digitalocean_token", r"\bdo[opr]_v1_[0-9a-f]{64}\b", ("_v1_",), splittable=True),
    PatternRule("databricks_token", r"\bdapi[0-9a-f]{32}(?:-\d)?\b", ("dapi",), splittable=True),
    PatternRule("vault_token", r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}", ("hvs.", "hvb.", "hvr."), splittable=True),
    PatternRule("linear_key", r"\blin_api_[A-Za-z0-9]{40}\b", ("lin_api_",), splittable=True),
    PatternRule(
        "notion_token", r"\b(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})\b", ("secret_", "ntn_"), splittable=True
    ),
    PatternRule(
        "square_token",
        r"\b(?:sq0atp-[0-9A-Za-z_-]{22}|sq0csp-[0-9A-Za-z_-]{43}|EAAA[0-9A-Za-z_-]{60})",
        ("sq0atp-", "sq0csp-", "eaaa"),
        splittable=True,
    ),
    PatternRule("telegram_bot_token", r"\b\d{8,10}:AA[0-9A-Za-z_-]{33}\b", (":aa",), splittable=True),
    PatternRule("azure_storage_key", r"AccountKey=([A-Za-z0-9+/]{86}==)", ("accountkey=",), group=1),
    PatternRule("azure_sas_signature", r"[?&]sig=([A-Za-z0-9%+/=]{30,})", ("sig=",), group=1),
    PatternRule(
        "azure_client_secret",
        r"[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}",
        ("q~",),
        not_before=_AZURE_SECRET,
        not_after=_AZURE_SECRET,
    ),
    # Our own API keys: rv_<key id>_<secret>.
    PatternRule("rearview_api_key", r"\brv_[A-Za-z0-9]{4,40}_[A-Za-z0-9_-]{16,}", ("rv_",), splittable=True),
    # user:password@host in a URL: the password runs to the last `@` before the host (a password may hold `@`).
    PatternRule("url_password", r"://[^/\s:@]+:(\S+)@[A-Za-z0-9.\[\]-]+(?:[:/?#\s]|\z)", ("://",), group=1),
    # Other labelled credentials: the label says it is a secret and the value looks like a token.
    PatternRule(
        "api_key",
        r"(?i)\b(?:api[_ -]?key|api[_ -]?token|secret[_ -]?key|access[_ -]?token|auth[_ -]?token|client[_ -]?secret|"
        r"app[_ -]?secret|private[_ -]?token|refresh[_ -]?token|webhook[_ -]?secret|signing[_ -]?secret)"
        r"[\"']?\s*(?:[:=]|\bis\b|\bwas\b)\s*[\"']?([A-Za-z0-9_\-./+=~]{12,})",
        ("api", "secret", "token"),
        group=1,
    ),
    PatternRule(
        "password",
        r"(?i)(?:[A-Za-z]+_)?(?:password|passwd|passphrase|passcode|pwd)[\"']?\s*[:=]\s*"
        r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s,;\"']+)",
        ("pass", "pwd"),
        group=1,
        not_before=LETTERS,
    ),
    # Said in words: "my password is hunter2", "the wifi password was Tr0ub4dor&3", "the password for the router is
    # Hunter2!", "PIN is 4821"; not "the password is expired".
    PatternRule(
        "password",
        r"(?i)\b(?:password|passwd|passphrase|passcode|pin(?:\s+code)?|pw)(?:\s+(?:for|of|to)(?:\s+[^\s.,;:!?]+){1,4}?)?"
        r"\s+(?:is|was|will\s+be|should\s+be|to)\s+[\"'“]?([^\s\"'”]{4,})",
        ("pass", "pin", "pw"),
        group=1,
        accept=_said_password,
        trim=_SENTENCE_END,
    ),
    PatternRule(
        "password",
        r"(?:密码|口令|密碼|パスワード)\s*(?:是|为|為|:|：|は)\s*([^\s，。,.;；\"'”]{4,})",
        ("密码", "口令", "密碼", "パスワード"),
        group=1,
    ),
    # A generic label ("token", "secret", "key", "credential") before a value no word is: letters of both cases and
    # a digit, or padded base64 ("my token is c2VjcmV0MTIz").
    PatternRule(
        "secret",
        r"(?i)\b(?:token|secret|credentials?|key|passkey)[\"']?\s*(?:[:=]|\bis\b|\bwas\b)\s*[\"']?"
        r"([A-Za-z0-9+/_-]{8,}={0,2})",
        ("token", "secret", "credential", "key"),
        group=1,
        accept=_token_like,
        not_after=_BASE64,
    ),
    # Padded base64 said alone, too short for the entropy rule below ("dGhpc2lzYXNlY3JldA==").
    PatternRule(
        "base64_secret",
        r"[A-Za-z0-9+/]{12,}={1,2}",
        ("=",),
        accept=_base64_padded,
        not_before=_BASE64,
        not_after=_BASE64,
    ),
)

# Long tokens that no text has: 32+ characters of a base64 alphabet mixing upper case, lower case and digits,
# dense in information (an AWS secret key said alone, an Azure key, a session secret). A ULID, a hex digest, a
# UUID or a long word lacks one of the three.
MIN_TOKEN_ENTROPY = 4.0


def shannon_entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _high_entropy(token: str) -> bool:
    mixed = any(c.isupper() for c in token) and any(c.islower() for c in token) and any(c.isdigit() for c in token)
    return mixed and shannon_entropy(token) >= MIN_TOKEN_ENTROPY


HIGH_ENTROPY_RULE = PatternRule(
    "high_entropy_secret",
    r"[A-Za-z0-9/+_-]{32,}={0,2}",
    (DIGIT,),
    accept=_high_entropy,
    not_before=_TOKEN_CHARS | {"="},
    not_after=_TOKEN_CHARS | {"="},
)

# detect-secrets plugins that name no credential: a public IP address is neither ours to hide nor a secret.
_LIBRARY_SKIPPED = frozenset({"Public IP (ipv4)"})

# The keywords of detect-secrets' plugins, by secret type: one of them is in every match of every pattern the
# plugin lists (lower-case). A plugin not named here runs on every text.
LIBRARY_KEYWORDS: dict[str, tuple[str, ...]] = {
    "AWS Access Key": ("akia", "asia", "abia", "acca", "a3t", "aws"),
    "Artifactory Credentials": ("akc", "ap"),
    "Azure Storage Account access key": ("accountkey=",),
    "Basic Auth Credentials": ("://",),
    "Cloudant Credentials": ("cl",),
    "Discord Bot Token": (".",),
    "GitHub Token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "GitLab Token": (
        "glpat-",
        "gldt-",
        "glft-",
        "glsoat-",
        "glrt-",
        "gr1348941",
        "glcbt-",
        "glimt-",
        "glptt-",
        "glagent-",
        "gloas-",
    ),  # fmt: skip
    "IBM Cloud IAM Key": ("key", "pwd", "pass", "token"),
    "IBM COS HMAC Credentials": ("secret",),
    "JSON Web Token": ("eyj",),
    "Mailchimp Access Key": ("-us",),
    "NPM tokens": ("_authtoken",),
    "OpenAI Token": ("t3blbkfj",),
    "Private Key": ("private key", "putty-user-key-file"),
    "PyPI Token": ("pypi-",),
    "SendGrid API Key": ("sg.",),
    "Slack Token": ("xox", "hooks.slack.com"),
    "SoftLayer Credentials": ("key", "pwd", "pass", "token", "softlayer"),
    "Square OAuth Secret": ("sq0csp-",),
    "Stripe Access Key": ("k_live_",),
    "Telegram Bot Token": (":",),
    "Twilio API Key": ("ac", "sk"),
}

# What RE2 does not take in the library's patterns, rewritten as a rule's own checks: a lookbehind that starts a
# pattern (a word character may not come before), a lookahead that ends one (none may follow), a lookahead that ends
# the secret's group (a character of the set may not follow it: one outside it, or the end, must), and a repetition
# past RE2's limit of 1,000.
_LEADING_LOOKBEHIND = "(?:(?<=\\W)|(?<=^))"
_TRAILING_LOOKAHEAD = "(?!\\w)"
_GROUP_LOOKAHEAD = re.compile(r"\(\?!\[([^\]]+)\]\)\)")
_LONG_REPEAT = re.compile(r"\{(\d+),(\d{4,})\}")


def _library_rule(kind: str, keywords: tuple[str, ...], pattern: re.Pattern[str]) -> PatternRule:
    source = pattern.pattern
    not_before: frozenset[str] = frozenset()
    not_after: frozenset[str] = frozenset()
    if source.startswith(_LEADING_LOOKBEHIND):
        source, not_before = source.removeprefix(_LEADING_LOOKBEHIND), WORD
    if source.endswith(_TRAILING_LOOKAHEAD):
        source, not_after = source.removesuffix(_TRAILING_LOOKAHEAD), WORD
    source = _GROUP_LOOKAHEAD.sub(lambda m: ")(?:[^" + m.group(1) + "]|\\z)", source)
    source = _LONG_REPEAT.sub(lambda m: "{" + m.group(1) + ",}", source)
    if pattern.flags & re.VERBOSE and any(c.isspace() or c == "#" for c in source):
        raise re2.error("a verbose pattern with spaces or comments")
    flags = "(?i)" if pattern.flags & re.IGNORECASE else ""
    group = 1 if pattern.groups else 0
    return PatternRule(kind, flags + source, keywords, group=group, not_before=not_before, not_after=not_after)


@cache
def library_rules() -> tuple[PatternRule, ...]:
    """The pattern lists of detect-secrets' regex-based plugins, as rules (kind: the plugin's secret type). A pattern
    RE2 cannot take even rewritten is left out, with a warning (the tests require none is)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    rules: list[PatternRule] = []
    plugins: dict[str, type] = get_mapping_from_secret_type_to_class()
    for secret_type, plugin in sorted(plugins.items()):
        if secret_type in _LIBRARY_SKIPPED or not issubclass(plugin, RegexBasedDetector):
            continue
        kind = re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_")
        keywords = LIBRARY_KEYWORDS.get(secret_type, ())
        patterns: Iterable[re.Pattern[str]] = vars(plugin)["denylist"]  # set by every concrete plugin class
        for pattern in patterns:
            try:
                rules.append(_library_rule(kind, keywords, pattern))
            except re2.error as exc:
                logger.warning("redaction: %s pattern %.60r left out (%s)", secret_type, pattern.pattern, exc)
    return tuple(rules)


@cache
def credential_screen() -> Screen[PatternRule]:
    """Our rules, then the library's, then the entropy rule, behind the screen that skips the ones a text cannot
    match."""
    return Screen((*OUR_RULES, *library_rules(), HIGH_ENTROPY_RULE))


def credential_findings(text: Subject | str, screened: bool = True) -> Iterator[Finding]:
    """Every credential found in `text` (overlaps included; the redactor keeps the first of overlapping spans).
    `screened=False` runs every rule: the reference the screen is tested and benchmarked against."""
    screen = credential_screen()
    subject = Subject(text) if isinstance(text, str) else text
    for each in screen.candidates(subject.text, subject.data) if screened else screen.rules:
        yield from each.findings(subject)


__all__ = ["HIGH_ENTROPY_RULE", "OUR_RULES", "Finding", "PatternRule", "credential_findings", "library_rules"]
