"""Output helpers shared by the API's shapes (the shapes themselves live with their app)."""


def iso(value) -> str | None:
    """A datetime as ISO 8601 in UTC with a `Z`, or None."""
    return value.isoformat().replace("+00:00", "Z") if value is not None else None
