"""/api/v1/reruns/: moderators queue reruns; rerun machines claim and finish them (``api.reruns``).

Who may call what:
- ``POST /reruns/``: a moderator — signed in to the site (session, with the CSRF token), or with
  an API token whose user is a moderator (active staff with ``api.add_rerunrequest``, which the
  ``moderators`` group has) — or a rerun token.
- ``POST /reruns/claim/`` and ``POST /reruns/<id>/finish/``: rerun tokens only.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers
from api.authentication import TokenAuthentication
from api.exceptions import ApiError
from api.models import ApiToken, RerunRequest
from api.parsers import BoundedJSONParser
from api.reruns import (
    RerunRefused,
    is_moderator,
    rerun_request_claim,
    rerun_request_create,
    rerun_request_finish,
    rerun_work,
)
from api.throttling import AnonThrottle, TokenThrottle
from api.views import ApiMixin
from runs.models import Benchmark, Run


class MayRequestReruns(permissions.BasePermission):
    message = "Requesting a rerun needs a moderator (signed in, or a moderator's API token) or a rerun token."

    def has_permission(self, request: Request, view: Any) -> bool:
        token = request.auth
        if isinstance(token, ApiToken):
            return token.is_active and (token.may_record_reruns or is_moderator(token.user))
        return is_moderator(request.user)


class HasRerunToken(permissions.BasePermission):
    message = "Only a rerun token (an API token with the rerun permission) can claim and finish reruns."

    def has_permission(self, request: Request, view: Any) -> bool:
        token = request.auth
        return isinstance(token, ApiToken) and token.is_active and token.may_record_reruns


def _refused(refused: RerunRefused) -> ApiError:
    return ApiError(refused.code, refused.message, field=refused.field, status_code=refused.status)


def _body(request: Request, allowed: set[str]) -> dict[str, Any]:
    data = request.data
    if not isinstance(data, dict):
        raise ApiError("invalid", "The body must be a JSON object.")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ApiError("invalid", f"Unknown field {unknown[0]!r}.", field=unknown[0])
    return data


def _validated(serializer_class: Any, request: Request) -> dict[str, Any]:
    serializer = serializer_class(data=_body(request, set(serializer_class().fields)))
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class _RerunView(ApiMixin, GenericAPIView):
    throttle_classes = [TokenThrottle, AnonThrottle]
    parser_classes = [BoundedJSONParser]
    pagination_class = None


class RerunRequestView(_RerunView):
    # The session comes second: a bearer token wins, and DRF enforces CSRF for session users.
    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [MayRequestReruns]
    serializer_class = serializers.RerunRequestSerializer

    @extend_schema(
        summary="Request a rerun",
        description=(
            "Queues a rerun of a benchmark's reference, scoring baseline or torch.compile of its reference, or of "
            "a run's published solution (target `run-solution` with `run`; the run's implementation document must "
            "carry its sources). Refused when no worker could run it, and with 409 when the same rerun is already "
            "queued or claimed."
        ),
        request=serializers.RerunRequestInputSerializer,
        responses={201: serializers.RerunRequestSerializer},
    )
    def post(self, request: Request) -> Response:
        data = _validated(serializers.RerunRequestInputSerializer, request)
        target_run = None
        if data.get("run"):
            target_run = (
                Run.objects.visible()
                .select_related("benchmark", "implementation")
                .filter(public_id=data["run"])
                .first()
            )
            if target_run is None:
                raise ApiError("invalid", f"No published run {data['run']}.", field="run")
        if data.get("benchmark"):
            benchmark = (
                Benchmark.objects.filter(source__slug=data["source"], native_id=data["benchmark"])
                .select_related("source")
                .first()
            )
            if benchmark is None:
                raise ApiError("invalid", f"No {data['source']} benchmark {data['benchmark']!r}.", field="benchmark")
        elif target_run is not None:
            benchmark = Benchmark.objects.select_related("source").get(pk=target_run.benchmark_id)
        else:
            raise ApiError("invalid", "Name the benchmark (or the run).", field="benchmark")
        token = request.auth if isinstance(request.auth, ApiToken) else None
        try:
            created = rerun_request_create(
                benchmark=benchmark,
                target=data["target"],
                target_run=target_run,
                requested_by=request.user,
                reason=data.get("reason", ""),
                trials=data.get("trials", 3),
                iterations=data.get("iterations", 50),
                warmup_seconds=data.get("warmupSeconds", 3.0),
                actor_label=f"api: {request.user.get_username()} (token {token.key_prefix}…)" if token else "",
            )
        except RerunRefused as refused:
            raise _refused(refused) from None
        shown = RerunRequest.objects.for_listing().get(pk=created.pk)
        return Response(serializers.RerunRequestSerializer(shown).data, status=status.HTTP_201_CREATED)


class RerunClaimView(_RerunView):
    permission_classes = [HasRerunToken]
    serializer_class = serializers.RerunWorkSerializer

    @extend_schema(
        summary="Claim the oldest rerun request",
        description=(
            "Atomically gives this worker the oldest queued request (or one whose previous claim's lease ran "
            "out), with everything needed to run it. 204 when there is nothing to do. Finish it before "
            "`leaseExpiresAt`, or it returns to the queue."
        ),
        request=serializers.RerunClaimInputSerializer,
        responses={200: serializers.RerunWorkSerializer, 204: OpenApiResponse(description="Nothing queued.")},
    )
    def post(self, request: Request) -> Response:
        data = _validated(serializers.RerunClaimInputSerializer, request)
        token = request.auth
        assert isinstance(token, ApiToken)  # HasRerunToken guarantees it
        worker = data.get("worker") or token.name
        if not worker.isprintable():
            raise ApiError("invalid", "The worker name must be printable text.", field="worker")
        while True:
            claimed = rerun_request_claim(token=token, worker_name=worker[:100])
            if claimed is None:
                return Response(status=status.HTTP_204_NO_CONTENT)
            claimed = RerunRequest.objects.select_related("benchmark__source", "target_run__implementation").get(
                pk=claimed.pk
            )
            try:
                return Response(rerun_work(claimed))
            except RerunRefused as refused:
                # Its definition or solution is gone since it was requested: no worker can run it.
                rerun_request_finish(request_id=claimed.pk, token=token, outcome="failed", reason=refused.message)


class RerunFinishView(_RerunView):
    permission_classes = [HasRerunToken]
    serializer_class = serializers.RerunRequestSerializer

    @extend_schema(
        summary="Finish a claimed rerun request",
        description=(
            "`done` with the public id of the run the worker recorded through `POST /api/v1/manifests/`, or "
            "`failed` with the reason (and the run, when the worker recorded the failure as one). Only the "
            "worker holding the claim can finish it (409 otherwise)."
        ),
        request=serializers.RerunFinishInputSerializer,
        responses={200: serializers.RerunRequestSerializer},
    )
    def post(self, request: Request, id: str) -> Response:  # noqa: A002 (the URL's name)
        # Any text routes here (a JSON 404 for a non-number, not the catch-all's CSRF page).
        if not (id.isascii() and id.isdigit()) or len(id) > 18:
            raise Http404(f"No rerun request {id}.")
        data = _validated(serializers.RerunFinishInputSerializer, request)
        token = request.auth
        assert isinstance(token, ApiToken)
        try:
            finished = rerun_request_finish(
                request_id=int(id),
                token=token,
                outcome=data["state"],
                run_public_id=data.get("run"),
                reason=data.get("reason", ""),
            )
        except RerunRefused as refused:
            raise _refused(refused) from None
        shown = RerunRequest.objects.for_listing().get(pk=finished.pk)
        return Response(serializers.RerunRequestSerializer(shown).data)
