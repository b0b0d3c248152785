"""The admin's view of API tokens: who has which, until when, and revoking them (a key is shown
once, when it is issued: the admin cannot make one)."""

from django.contrib import admin

from accounts.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "user", "name", "created_at", "expires_at")
    list_select_related = ("user",)
    search_fields = ("user__username", "name", "prefix")
    readonly_fields = ("user", "prefix", "name", "session_key", "created_at", "expires_at")
    exclude = ("digest",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
