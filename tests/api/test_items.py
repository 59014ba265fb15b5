"""The run item's dates are DRF's DateTimeField representation, whatever time zone they carry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from rest_framework import serializers

from api.items import _datetime


def test_dates_are_written_as_drf_writes_them() -> None:
    drf = serializers.DateTimeField()
    moments = [
        datetime(2026, 7, 14, 9, 30, tzinfo=UTC),
        datetime(2026, 7, 14, 9, 30, 5, 123456, tzinfo=UTC),
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(2026, 3, 29, 1, 30, tzinfo=ZoneInfo("Europe/Berlin")),
        datetime(2026, 7, 14, 9, 30, tzinfo=ZoneInfo("UTC")),
        datetime(2026, 7, 14, 9, 30, tzinfo=timezone(timedelta(hours=-7))),
    ]
    for moment in moments:
        assert _datetime(moment) == drf.to_representation(moment), moment
    assert _datetime(None) is None
