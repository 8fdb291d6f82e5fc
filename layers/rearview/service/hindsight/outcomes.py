"""Recognising how an episode turned out from its outcome text (English and Chinese), when the caller did not say."""

from __future__ import annotations

import re

from rearview.domain.memory import OutcomeStatus

# Words are delimited by letters only, so VERIFY_FAILED and timeout_error still count.
_FAILURE = re.compile(
    r"(?<![a-z])(?:fail(?:ed|s|ure|ing)?|errors?|errored|exceptions?|crash(?:ed|es)?|time[sd]?\s?out|timeouts?|"
    r"denied|refused|rejected|invalid|unavailable|unauthori[sz]ed|forbidden|broken|broke|aborted|"
    r"did\s?n[o']?t\s+work|does\s?n[o']?t\s+work|not\s+working|no\s+luck|unsuccessful|killed|out of memory|oom|"
    r"segfault|segmentation fault|panic(?:ked)?|traceback|exit code [1-9]\d*)(?![a-z])"
    # An HTTP status needs a word saying it is one: "geocoded 500 addresses" is no server error.
    r"|\b(?:http|status|code|error|returned|got)\s*:?\s*[45]\d\d\b|^\s*[45]\d\d\b"
    r"|\b[45]\d\d\s+(?:\w+\s+)?(?:error|too|large|payload|request|not|bad|unauthori[sz]ed|forbidden|"
    r"internal|service|gateway|conflict|timeout|limit|unavailable)"
    r"|失败|错误|报错|出错|超时|拒绝|不行|没成功|未成功|异常|崩溃|无法|不能用|挂了",
    re.IGNORECASE,
)
_PARTIAL = re.compile(
    r"\b(?:partial(?:ly)?|part\s+of|some\s+of|half|incomplete|mostly)\b|部分|一部分|一半|没完全", re.IGNORECASE
)
_SUCCESS = re.compile(
    r"\b(?:succe(?:ss|eded|ssful(?:ly)?)|ok(?:ay)?|worked|works|done|completed?|confirmed|passed|fixed|"
    r"resolved|booked|sent|delivered|accepted|fine|went\s+well|all\s+good|up\s+and\s+running)\b|\b(?:http|status)\s*:?\s*2\d\d\b|^\s*2\d\d\b"
    r"|成功|完成|搞定|可以了|好了|通过|解决了|已发送",
    re.IGNORECASE,
)


# The shapes a failure report takes whatever its words: a typed error ("ValueError: ...", "QuotaExceeded: ..."), an
# exception class, an errno name (ECONNRESET), an error constant (RATE_LIMITED), a non-zero exit, a status of 4xx or
# 5xx after "returned" in Chinese, or an ability denied ("could not convert", "无法连接").
_FAILURE_SHAPE = re.compile(
    r"^\s*(?:[A-Z][a-z0-9]+){2,}\s*:|\b[A-Z][A-Za-z]*(?:Error|Exception)\b|\bE[A-Z]{4,}\b|\b[A-Z]{3,}(?:_[A-Z0-9]+)+\b"
    r"|\bexit(?:ed)?\b[^.;,]{0,16}?\b(?:status|code)\s*:?\s*[1-9]\d{0,2}\b|\bexit status [1-9]"
    r"|\b(?:could not|couldn'?t|unable to|can'?t|cannot)\b|(?:返回|状态码?)\s*[:：]?\s*[45]\d\d"
)
# The shapes of a success: a zero exit, a whole count done ("34/34"), or finished in Chinese.
_SUCCESS_SHAPE = re.compile(r"\bexit(?:ed)?\b[^.;,]{0,16}?\b(?:status|code)\s*:?\s*0\b|\b(\d+)/\1\b|完毕|全部完成")


def failure_shaped(text: str) -> bool:
    """Whether an outcome text has the shape of a failure report, whatever its words."""
    return bool(_FAILURE_SHAPE.search(text))


def recognise_outcome(text: str | None) -> OutcomeStatus | None:
    """The status an outcome text states: failure before partial before success (a "partial success" is
    partial, "succeeded after 2 errors" counts its failure words second); None for no text, unknown for text
    that states none of them."""
    if text is None or not text.strip():
        return None
    if _PARTIAL.search(text):
        return "partial"
    failure = _FAILURE.search(text) or _FAILURE_SHAPE.search(text)
    success = _SUCCESS.search(text) or _SUCCESS_SHAPE.search(text)
    if failure and (not success or failure.start() <= success.start()):
        return "failure"
    if success:
        return "success"
    return "unknown"
