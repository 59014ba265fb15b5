"""The moderators' console (KernelIndex's Django admin): queues of pending attestations and open
reports, the moderation log, runs with their moderation actions. Importing the package registers
every ModelAdmin.

Everything users submitted is read-only here and nothing can be deleted by moderators
(superusers only, one object at a time, for attestations and reports; never in bulk, never for
runs or the moderation log). Each change page offers its object's actions as buttons.
Changelists load their related rows with ``list_select_related`` and counts with subqueries,
so a page of 100 rows costs the same queries as a page of 10.
"""

from django.contrib import admin

from attestations.admin import log, runs, submissions

# The one place the console is named (header, browser title, index heading).
admin.site.site_header = "KernelIndex moderation"
admin.site.site_title = "KernelIndex moderation"
admin.site.index_title = "Moderation console"

__all__ = ["log", "runs", "submissions"]
