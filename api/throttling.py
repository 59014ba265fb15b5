"""Request throttles for the API, on top of the per-post limits the forms share.

Anonymous clients are told apart exactly as the forms tell them apart
(``kernelindex.clients.client_key``: the address the trusted proxies report, IPv6 by /64);
authenticated clients by their token, so one owner's CI jobs on many machines share one
budget. Rates are read at call time from ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` (not frozen
at import as DRF's defaults are), so deployments and tests can change them.

Counting is a fixed window per client (``kernelindex.ratelimit.count``), not DRF's sliding log:
the log is a list of every request's time in the last window, read, pickled and written back on
each request (its cost grows with the rate: at 6,000/min a request moved 6,000 floats), and its
get-then-set loses counts when one client's requests run in parallel. A counter is one atomic
increment. The price is the fixed window's edge: a client may spend one window's budget at its
end and the next at the start of the next.
"""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from api.models import ApiToken
from kernelindex import ratelimit
from kernelindex.clients import client_key

# Where a request counted before DRF's throttles ran (api.conditional) keeps (key, allowed,
# retry after), so the throttle of that key does not count it twice.
COUNTED = "_ki_throttle_counted"


class _Throttle(SimpleRateThrottle):
    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def __init__(self) -> None:
        # SimpleRateThrottle reads the rate in __init__; do it here from current settings.
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self.retry_after = 0

    def allow_request(self, request: Request, view: Any) -> bool:
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        counted = getattr(request._request, COUNTED, None)
        if counted is not None and counted[0] == key:  # counted before the view (api.conditional)
            allowed, self.retry_after = counted[1], counted[2]
            return allowed
        allowed, self.retry_after = ratelimit.count(key, self.duration, self.num_requests, now=self.timer())
        return allowed

    def wait(self) -> float | None:
        return self.retry_after


class AnonThrottle(_Throttle):
    """Clients without a token."""

    scope = "anon"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if isinstance(request.auth, ApiToken):
            return None
        return self.key_of(request)

    def key_of(self, request: Any) -> str:
        """The counter of an anonymous client (a DRF or a Django request)."""
        return self.cache_format % {"scope": self.scope, "ident": client_key(request)}


class TokenThrottle(_Throttle):
    """Clients with a token, one budget per token."""

    scope = "token"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if not isinstance(request.auth, ApiToken):
            return None
        return self.cache_format % {"scope": self.scope, "ident": f"token:{request.auth.pk}"}


class SubmissionThrottle(_Throttle):
    """Manifest submissions per token: imports are the most expensive requests."""

    scope = "submissions"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        ident = f"token:{request.auth.pk}" if isinstance(request.auth, ApiToken) else client_key(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}
