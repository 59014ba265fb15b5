"""django-axes' records of sign-ins in the admin, readable by moderators.

Whoever may read the moderation log (the ``moderators`` group's
``attestations.view_moderationevent``) may also read the failed sign-ins and lockouts: both are
the record of what happened to the site. Reading only; lifting a lockout stays with superusers
(delete the attempt) or ``manage.py axes_reset_username``.
"""

from __future__ import annotations

from axes.admin import AccessAttemptAdmin, AccessFailureLogAdmin, AccessLogAdmin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin
from django.http import HttpRequest

MODERATION_LOG_PERMISSION = "attestations.view_moderationevent"


class ModeratorsMayRead:
    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) or request.user.has_perm(MODERATION_LOG_PERMISSION)

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return super().has_view_permission(request, obj) or request.user.has_perm(MODERATION_LOG_PERMISSION)


@admin.register(AccessAttempt)
class SignInAttemptAdmin(ModeratorsMayRead, AccessAttemptAdmin):
    pass


@admin.register(AccessFailureLog)
class SignInFailureAdmin(ModeratorsMayRead, AccessFailureLogAdmin):
    pass


@admin.register(AccessLog)
class SignInLogAdmin(ModeratorsMayRead, AccessLogAdmin):
    pass
