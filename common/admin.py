"""What the apps' admins share."""

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records of what happened: no adding, no changing."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
