"""Accounts: registration, token sign-in and sign-out, the API's token authentication and the
sign-in rate limits (the HTML forms are in `frontend.views.accounts`)."""
