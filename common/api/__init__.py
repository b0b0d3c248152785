"""The REST API's plumbing shared by every app: base views, the error body, parsing, output."""
