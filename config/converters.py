"""URL converters."""

MAX_ID = 2**63 - 1  # primary keys are 64-bit in the database


class IdConverter:
    """A database id in a URL: 1 to 2**63 - 1. A larger number names nothing, so the URL does
    not match (404) instead of reaching the database with a number it cannot hold."""

    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if not 0 < number <= MAX_ID:
            raise ValueError(value)  # Django: this pattern does not match
        return number

    def to_url(self, value: int) -> str:
        return str(value)
