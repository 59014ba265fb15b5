"""Who is asking: one stable, opaque key per client, for rate limits and telling reporters apart.

The client is ``REMOTE_ADDR`` unless ``settings.TRUSTED_PROXY_COUNT`` says how many reverse
proxies in front of the app append to ``X-Forwarded-For``. Only the entries those proxies
wrote are believed: with N trusted proxies the client is the N-th entry from the right.
Anything to the left of it was written by the client itself and is ignored, so a forged
header cannot change the key.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str:
    """The client's address as far as trusted proxies tell; '' when unknown."""
    remote = (request.META.get("REMOTE_ADDR") or "").strip()
    hops = int(getattr(settings, "TRUSTED_PROXY_COUNT", 0) or 0)
    if hops <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    forwarded = [part for part in forwarded if part]
    if len(forwarded) < hops:
        # The request did not pass through every trusted proxy: only the socket is known.
        return remote
    return forwarded[-hops]


def _network(address: str) -> str:
    """IPv4 addresses as they are; IPv6 by their /64, which one subscriber usually holds whole."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    return str(ip)


def client_key(request: HttpRequest) -> str:
    """An opaque key for the client (HMAC of its network), safe to store and to log.

    Stable API for the forms and the JSON API: ``client_key(request) -> str``.
    """
    network = _network(client_ip(request)) or "unknown"
    mac = hmac.new(settings.SECRET_KEY.encode(), f"client:{network}".encode(), hashlib.sha256)
    return "c:" + mac.hexdigest()[:32]
