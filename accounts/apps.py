from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"

    def ready(self) -> None:
        # Django's own hooks at every door's sign-in and sign-out (the site's form, sign-up, the
        # admin, the API's session logout): a session is recorded when it signs in, and the
        # tokens issued to it are revoked when it signs out.
        from django.contrib.auth.signals import user_logged_in, user_logged_out

        from accounts import services

        user_logged_in.connect(services.on_session_signed_in, dispatch_uid="accounts.signed_in")
        user_logged_out.connect(services.on_session_signed_out, dispatch_uid="accounts.signed_out")
