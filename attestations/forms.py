"""Forms for the public attestation and report pages, also used by the JSON API.

Both take the run they are about (``AttestationForm(data, run=run)``) and accept a QueryDict
from a page or a plain dict from parsed JSON. ``service_kwargs()`` gives the keyword arguments
of the matching service (``attestation_create`` / ``issue_report_create``).

Each form carries a honeypot field, ``website``: people never see it (it is hidden and
labelled "leave empty"), bots fill it in. ``is_bot()`` tells the view to answer as if all went
well and store nothing.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.validators import URLValidator

from attestations.models import UNIT_NS, AttestationKind, ReportCategory
from kernelindex import links
from runs.models import Run

HONEYPOT = "website"

STATISTICS = [
    ("mean", "mean"),
    ("median", "median"),
    ("min", "min"),
    ("max", "max"),
    ("p90", "p90"),
    ("p99", "p99"),
    ("geomean", "geometric mean"),
]
UNITS = [(unit, unit) for unit in UNIT_NS]
# What people type when they cannot type µ.
UNIT_ALIASES = {"us": "µs", "μs": "µs", "usec": "µs", "nsec": "ns", "msec": "ms"}


def validate_http_url(value: str) -> None:
    """The project's one URL rule (``kernelindex.links``), as a form validator."""
    why = links.problem(value, max_length=500)
    if why is not None:
        raise forms.ValidationError(f"Enter an http:// or https:// link: this one {why}.", code="not_http")


class HttpURLField(forms.URLField):
    """An http(s) URL, nothing else (no javascript:, data:, ftp:)."""

    default_validators = [validate_http_url, URLValidator(schemes=["http", "https"])]
    default_error_messages = {"invalid": "Enter a valid http:// or https:// link."}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("assume_scheme", "https")
        kwargs.setdefault("max_length", 500)
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> str:
        # "example.org/logs" means https://example.org/logs, but a protocol-relative "//host/…"
        # is refused like every other URL without an http(s) scheme.
        if isinstance(value, str) and value.strip().startswith("//"):
            raise forms.ValidationError(
                "Enter an http:// or https:// link: this one has no scheme (it starts with //).", code="not_http"
            )
        return super().to_python(value)


class UnitField(forms.ChoiceField):
    def to_python(self, value: Any) -> str:
        value = super().to_python(value).strip()
        return UNIT_ALIASES.get(value, value)


class SubmissionForm(forms.Form):
    """What both forms share: the run they are about, JSON-safe input, the honeypot."""

    website = forms.CharField(
        required=False,
        max_length=200,
        label="Leave this field empty",
        widget=forms.TextInput(attrs={"autocomplete": "off", "tabindex": "-1"}),
    )

    def __init__(self, data: Any = None, *, run: Run, **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.run = run

    def full_clean(self) -> None:
        super().full_clean()
        if self.is_bound and hasattr(self.data, "items"):
            # JSON bodies can carry objects and lists where a form expects text: say so per field.
            for name, value in list(self.data.items()):
                if name in self.fields and isinstance(value, (dict, list)):
                    self.add_error(name, "Expected a single value, not a list or an object.")

    def is_bot(self) -> bool:
        """True when the honeypot was filled in (valid forms only)."""
        return bool(self.cleaned_data.get(HONEYPOT, "").strip())


class AttestationForm(SubmissionForm):
    kind = forms.ChoiceField(
        choices=AttestationKind.choices, initial=AttestationKind.REPRODUCTION, widget=forms.RadioSelect
    )
    measured_value = forms.FloatField(
        required=False, min_value=0, max_value=1e15, help_text="Your measurement of the primary statistic."
    )
    measured_unit = UnitField(choices=UNITS, required=False, initial="µs", label="Unit")
    measured_statistic = forms.ChoiceField(choices=STATISTICS, required=False, initial="mean", label="Statistic")
    cases_reproduced = forms.IntegerField(required=False, min_value=1, max_value=1_000_000)
    cases_matched = forms.IntegerField(
        required=False, min_value=0, max_value=1_000_000, help_text="Cases whose output matched the reference."
    )
    gpu_product = forms.CharField(required=False, max_length=200, label="GPU product", strip=True)
    driver_version = forms.CharField(required=False, max_length=100, label="Driver version")
    cuda_version = forms.CharField(required=False, max_length=100, label="CUDA version")
    torch_version = forms.CharField(required=False, max_length=100, label="torch version")
    command = forms.CharField(
        required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 3}), label="Command or harness"
    )
    link = HttpURLField(required=False, label="Link", help_text="Logs (reproduction) or a reference (note).")
    text = forms.CharField(required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 6}), label="Text")

    REPRODUCTION_FIELDS = (
        "measured_value",
        "measured_unit",
        "measured_statistic",
        "cases_reproduced",
        "cases_matched",
        "gpu_product",
        "driver_version",
        "cuda_version",
        "torch_version",
        "command",
    )
    REQUIRED_FOR_REPRODUCTION = (
        "measured_value",
        "measured_unit",
        "measured_statistic",
        "cases_reproduced",
        "cases_matched",
        "gpu_product",
        "command",
    )

    def clean_measured_value(self) -> float | None:
        value = self.cleaned_data.get("measured_value")
        if value is not None and value <= 0:
            raise forms.ValidationError("A measured time must be greater than zero.")
        return value

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        kind = data.get("kind")
        if kind == AttestationKind.REPRODUCTION:
            for name in self.REQUIRED_FOR_REPRODUCTION:
                if name not in self.errors and data.get(name) in (None, ""):
                    self.add_error(name, "Required for a reproduction.")
            reproduced, matched = data.get("cases_reproduced"), data.get("cases_matched")
            if reproduced is not None and matched is not None and matched > reproduced:
                self.add_error("cases_matched", "Cannot exceed the number of cases reproduced.")
        elif kind == AttestationKind.NOTE:
            if not data.get("text") and "text" not in self.errors:
                self.add_error("text", "A note needs some text.")
            # A note carries only text and a link; whatever else was typed is not part of it.
            for name in self.REPRODUCTION_FIELDS:
                data[name] = None if name in {"measured_value", "cases_reproduced", "cases_matched"} else ""
        return data

    def service_kwargs(self) -> dict[str, Any]:
        data = self.cleaned_data
        kwargs = {name: data.get(name) for name in ("kind", "link", "text", *self.REPRODUCTION_FIELDS)}
        for name, value in kwargs.items():
            if value is None and name not in {"measured_value", "cases_reproduced", "cases_matched"}:
                kwargs[name] = ""
        return kwargs


class IssueReportForm(SubmissionForm):
    category = forms.ChoiceField(choices=ReportCategory.choices)
    description = forms.CharField(
        min_length=10,
        max_length=5000,
        widget=forms.Textarea(attrs={"rows": 8}),
        help_text="What is wrong, and how you know. Reports are seen by moderators only.",
    )
    contact_email = forms.EmailField(
        required=False, max_length=254, label="Contact email (optional)", help_text="Only moderators see it."
    )

    def service_kwargs(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "category": data["category"],
            "description": data["description"],
            "contact_email": data.get("contact_email") or "",
        }
