"""The annotation REST API: thin DRF views over `annotation.services` and `annotation.selectors`.

The contract (endpoints, request and response JSON, error codes) is `annotation/API.md`; the
machine-readable schema is served at /api/schema/.
"""
