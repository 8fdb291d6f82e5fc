"""Credentials: our own rules for what agents' conversations hold (keys in prose, labelled and unlabelled, passwords
said in words), and the vendor patterns detect-secrets maintains (Yelp's scanner: AWS, Azure, Stripe, Twilio, npm,
PyPI, SendGrid, Telegram, Discord, Mailchimp, IBM, Artifactory ...), which we read as its `RegexBasedDetector`
plugins' own pattern lists so that each finding has a place in the text to replace.

Each rule gives a kind and the span of the secret; a label around it ("Bearer ", "password=") stays, so the memory
still says what was there.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache

from rearview.service.redaction.screen import Screen


@dataclass(frozen=True)
class Finding:
    """A span of the normalised text to replace, and what it holds."""

    start: int
    end: int
    kind: str


@dataclass(frozen=True)
class PatternRule:
    kind: str
    pattern: re.Pattern[str]
    group: int | str = 0  # the group holding the secret (0: the whole match)

    def findings(self, text: str) -> Iterator[Finding]:
        for match in self.pattern.finditer(text):
            start, end = match.span(self.group)
            if end > start:
                yield Finding(start, end, self.kind)


def _rule(kind: str, pattern: str, group: int | str = 0, flags: int = 0) -> PatternRule:
    return PatternRule(kind, re.compile(pattern, flags), group)


_I = re.IGNORECASE
# A value that looks like a password rather than a word: a digit or a symbol in it, or both cases past the first.
_PASSWORDISH = r"(?=\S*(?:\d|[!@#$%^&*()_+=\[\]{}|;:,.<>?/~`\\-]|[a-z]\S*[A-Z]))"

# Order matters where spans overlap: the earlier rule's finding is kept (a PEM block whole, before a token rule
# could take a piece of it; a labelled key before the generic high-entropy rule).
OUR_RULES: tuple[PatternRule, ...] = (
    _rule(
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        # A key cut off before its END line is still a key: mask to the end of the text.
        r"[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    _rule("age_secret_key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b"),
    # A bearer credential has a digit or a symbol in it, or is one long word no language has ("the bearer of
    # bad tidings" stays).
    _rule(
        "bearer_token",
        r"\bbearer\s+((?=[A-Za-z._~+/-]*[0-9._~+/-])[A-Za-z0-9._~+/-]{16,}=*|[A-Za-z]{24,})(?![A-Za-z0-9])",
        1,
        _I,
    ),
    _rule("jwt", r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
    _rule("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    _rule(
        "aws_secret_key",
        r"\b(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{30,})",
        1,
        _I,
    ),
    _rule("anthropic_api_key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    _rule("stripe_key", r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}"),
    _rule("openai_api_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    _rule("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    _rule("slack_token", r"\bxox[bpaers]-[A-Za-z0-9-]{10,}"),
    _rule("slack_webhook", r"hooks\.slack\.com/(?:services|workflows)/([A-Za-z0-9_/-]{20,})", 1),
    _rule("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}"),
    _rule("gitlab_token", r"\bgl(?:pat|dt|ptt|rt|soat)-[A-Za-z0-9_-]{20,}"),
    _rule("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    _rule("pypi_token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    _rule("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}\b"),
    _rule("twilio_key", r"\b(?:SK|AC)[0-9a-fA-F]{32}\b"),
    _rule("sendgrid_key", r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"),
    _rule("mailgun_key", r"\bkey-[0-9a-f]{32}\b"),
    _rule("shopify_token", r"\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}\b"),
    _rule("digitalocean_token", r"\bdo[opr]_v1_[0-9a-f]{64}\b"),
    _rule("databricks_token", r"\bdapi[0-9a-f]{32}(?:-\d)?\b"),
    _rule("vault_token", r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}"),
    _rule("linear_key", r"\blin_api_[A-Za-z0-9]{40}\b"),
    _rule("notion_token", r"\b(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})\b"),
    _rule("square_token", r"\b(?:sq0atp-[0-9A-Za-z_-]{22}|sq0csp-[0-9A-Za-z_-]{43}|EAAA[0-9A-Za-z_-]{60})"),
    _rule("telegram_bot_token", r"\b\d{8,10}:AA[0-9A-Za-z_-]{33}\b"),
    _rule("azure_storage_key", r"AccountKey=([A-Za-z0-9+/]{86}==)", 1),
    _rule("azure_sas_signature", r"[?&]sig=([A-Za-z0-9%+/=]{30,})", 1),
    _rule(
        "azure_client_secret", r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"
    ),
    # Our own API keys: rv_<key id>_<secret>.
    _rule("rearview_api_key", r"\brv_[A-Za-z0-9]{4,40}_[A-Za-z0-9_-]{16,}"),
    # user:password@host in a URL: the password runs to the last `@` before the host (a password may hold `@`).
    _rule("url_password", r"(?<=://)[^/\s:@]+:(\S+)@(?=[A-Za-z0-9.\[\]-]+(?:[:/?#]|\s|$))", 1),
    # Other labelled credentials: the label says it is a secret and the value looks like a token.
    _rule(
        "api_key",
        r"\b(?:api[_ -]?key|api[_ -]?token|secret[_ -]?key|access[_ -]?token|auth[_ -]?token|client[_ -]?secret|"
        r"app[_ -]?secret|private[_ -]?token|refresh[_ -]?token|webhook[_ -]?secret|signing[_ -]?secret)"
        r"[\"']?\s*(?:[:=]|\bis\b|\bwas\b)\s*[\"']?([A-Za-z0-9_\-./+=~]{12,})",
        1,
        _I,
    ),
    _rule(
        "password",
        r"(?<![A-Za-z])(?:[A-Za-z]+_)?(?:password|passwd|passphrase|passcode|pwd)[\"']?\s*[:=]\s*"
        r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s,;\"']+)",
        1,
        _I,
    ),
    # Said in words: "my password is hunter2", "the wifi password was Tr0ub4dor&3", "PIN is 4821".
    _rule(
        "password",
        r"\b(?:password|passwd|passphrase|passcode|pin(?:\s+code)?|pw)\s+(?:is|was|will\s+be|should\s+be|to)\s+"
        r"[\"'“]?(" + _PASSWORDISH + r"[^\s\"'”]{4,})",
        1,
        _I,
    ),
    _rule("password", r"(?:密码|口令|密碼|パスワード)\s*(?:是|为|為|:|：|は)\s*([^\s，。,.;；\"'”]{4,})", 1),
)

# Long tokens that no text has: 32+ characters of a base64 alphabet mixing upper case, lower case and digits,
# dense in information (an AWS secret key said alone, an Azure key, a session secret). A ULID, a hex digest, a
# UUID or a long word lacks one of the three.
_TOKEN = re.compile(r"(?<![A-Za-z0-9/+_=-])[A-Za-z0-9/+_-]{32,}={0,2}(?![A-Za-z0-9/+_=-])")
MIN_TOKEN_ENTROPY = 4.0


def shannon_entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def high_entropy_tokens(text: str) -> Iterator[Finding]:
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        mixed = any(c.isupper() for c in token) and any(c.islower() for c in token) and any(c.isdigit() for c in token)
        if mixed and shannon_entropy(token) >= MIN_TOKEN_ENTROPY:
            yield Finding(match.start(), match.end(), "high_entropy_secret")


# detect-secrets plugins that name no credential: a public IP address is neither ours to hide nor a secret.
_LIBRARY_SKIPPED = frozenset({"Public IP (ipv4)"})


@cache
def library_rules() -> tuple[PatternRule, ...]:
    """The pattern lists of detect-secrets' regex-based plugins, as rules (kind: the plugin's secret type)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    rules: list[PatternRule] = []
    plugins: dict[str, type] = get_mapping_from_secret_type_to_class()
    for secret_type, plugin in sorted(plugins.items()):
        if secret_type in _LIBRARY_SKIPPED or not issubclass(plugin, RegexBasedDetector):
            continue
        kind = re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_")
        patterns: Iterable[re.Pattern[str]] = vars(plugin)["denylist"]  # set by every concrete plugin class
        for pattern in patterns:
            group = 1 if pattern.groups else 0
            rules.append(PatternRule(kind, pattern, group))
    return tuple(rules)


@cache
def credential_screen() -> Screen[PatternRule]:
    """Our rules, then the library's, behind the screen that skips the ones a text cannot match."""
    return Screen((*OUR_RULES, *library_rules()))


def credential_findings(text: str, screened: bool = True) -> Iterator[Finding]:
    """Every credential found in `text` (overlaps included; the redactor keeps the first of overlapping spans).
    `screened=False` runs every rule: the reference the screen is tested and benchmarked against."""
    screen = credential_screen()
    for rule in screen.candidates(text) if screened else screen.rules:
        yield from rule.findings(text)
    yield from high_entropy_tokens(text)
