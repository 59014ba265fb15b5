"""Logging filters: secrets that travel in URLs never reach a log line."""

from __future__ import annotations

import logging
import re

# Django's password-reset confirmation link: /accounts/reset/<uidb64>/<token>/. The token is a
# live credential until used; "set-password" is the token-free address Django redirects to.
_RESET_LINK = re.compile(r"(/reset/[0-9A-Za-z_\-]+/)(?!set-password/)[0-9A-Za-z]+-[0-9A-Za-z]+")


def redact(text: str) -> str:
    """``text`` with the token of every password-reset link replaced by ``[redacted]``."""
    return _RESET_LINK.sub(r"\1[redacted]", text)


class RedactSecretsFilter(logging.Filter):
    """Rewrites each record's message (arguments merged in) with reset tokens redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
