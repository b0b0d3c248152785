"""Accounts: registration, token sign-in and sign-out, and the sign-in rate limits. The API
authenticates tokens with DRF's `TokenAuthentication`; the HTML forms are in
`frontend.views.accounts`."""
