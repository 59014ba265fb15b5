"""Public pages: add a reproduction or note, report an issue, and their confirmations.

Anonymous posts are rate limited per client (``kernelindex.ratelimit``); a post that fills the
honeypot is answered exactly like a successful one and nothing is stored.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from attestations import submissions
from attestations.forms import AttestationForm, IssueReportForm
from kernelindex import ratelimit
from kernelindex.clients import client_key
from runs.models import Run


def _visible_run(public_id: str) -> Run:
    # Tombstones (hidden, retracted) take no new attestations or reports.
    return get_object_or_404(Run.objects.visible().select_related("benchmark", "source"), public_id=public_id)


def rate_limited(request: HttpRequest, retry_after: int) -> HttpResponse:
    response = render(request, "attestations/rate_limited.html", {"retry_after": retry_after}, status=429)
    response["Retry-After"] = str(retry_after)
    return response


def _fake_reference(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(5)}"


def _submission(
    request: HttpRequest,
    public_id: str,
    *,
    form_class: type,
    create: Callable[..., Any],
    template: str,
    received: str,
    prefix: str,
    initial: dict[str, Any] | None = None,
) -> HttpResponse:
    """GET shows the form; POST rate-limits, validates, drops bot posts without storing them,
    creates through the service and redirects to the confirmation page with its reference."""
    run = _visible_run(public_id)
    if request.method != "POST":
        return render(request, template, {"run": run, "form": form_class(run=run, initial=initial)})
    allowed, retry_after = ratelimit.check(request, ratelimit.SUBMISSIONS)
    if not allowed:
        return rate_limited(request, retry_after)
    form = form_class(request.POST, run=run)
    if not form.is_valid():
        return render(request, template, {"run": run, "form": form}, status=400)
    if form.is_bot():
        reference = _fake_reference(prefix)
    else:
        try:
            created = create(request, run, form)
        except ValidationError as error:
            form.add_error(None, error)
            return render(request, template, {"run": run, "form": form}, status=400)
        reference = created.reference
    return redirect(received, public_id=run.public_id, reference=reference)


@require_http_methods(["GET", "POST"])
def attest(request: HttpRequest, public_id: str) -> HttpResponse:
    return _submission(
        request,
        public_id,
        form_class=AttestationForm,
        create=lambda request, run, form: submissions.attestation_create(
            run=run, author=request.user, client_key=client_key(request), **form.service_kwargs()
        ),
        template="attestations/attest_form.html",
        received="attestations:attest_received",
        prefix="A",
        initial={"kind": request.GET.get("kind", "reproduction")},
    )


@require_http_methods(["GET", "POST"])
def report(request: HttpRequest, public_id: str) -> HttpResponse:
    return _submission(
        request,
        public_id,
        form_class=IssueReportForm,
        create=lambda request, run, form: submissions.issue_report_create(
            run=run, reporter=request.user, client_key=client_key(request), **form.service_kwargs()
        ),
        template="attestations/report_form.html",
        received="attestations:report_received",
        prefix="R",
    )


def _received(request: HttpRequest, public_id: str, reference: str, *, what: str) -> HttpResponse:
    # The page only echoes the reference from its URL (a pattern-checked token) and reads no
    # row: a bot's fake reference gets the same page as a real one, and nobody can use these
    # pages to see what somebody else submitted.
    if not Run.objects.visible().filter(public_id=public_id).exists():
        raise Http404("No such run.")
    return render(
        request,
        "attestations/received.html",
        {
            "what": what,
            "reference": reference,
            "public_id": public_id,
            "run_url": reverse("runs:run_detail", args=[public_id]),
        },
    )


def attest_received(request: HttpRequest, public_id: str, reference: str) -> HttpResponse:
    return _received(request, public_id, reference, what="attestation")


def report_received(request: HttpRequest, public_id: str, reference: str) -> HttpResponse:
    return _received(request, public_id, reference, what="report")
