"""The moderators' console (KernelIndex's Django admin): queues of pending attestations and open
reports, the moderation log, runs with their moderation actions. Importing the package registers
every ModelAdmin.

Everything users submitted is read-only here and nothing can be deleted by moderators
(superusers only, for attestations and reports; never for runs or the moderation log).
Changelists load their related rows with ``list_select_related`` and counts with subqueries,
so a page of 100 rows costs the same queries as a page of 10.
"""

from attestations.admin import log, runs, submissions

__all__ = ["log", "runs", "submissions"]
