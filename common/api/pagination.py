"""Paging of every API list: `?limit=&offset=`, strictly read.

A paging parameter that is not a whole number in range is a 400 that names it and says why (DRF
silently used the default instead); a `limit` above `MAX_LIMIT` is capped (DRF passed any size
to the database, which answered 500 past 64 bits); an `offset` past the end is an empty page.
"""

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination

MAX_LIMIT = 500
_MAX_DIGITS = 18  # beyond, a number is "very large" (and int() of 4,300 digits is refused)


def _whole_number(request, name: str, *, minimum: int) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if not raw.isascii() or not raw.isdigit() or (int(raw[:_MAX_DIGITS]) < minimum):
        raise ValidationError(
            {name: [f"A whole number of at least {minimum} is required; got {raw[:20]!r}."]}
        )
    return int(raw) if len(raw) <= _MAX_DIGITS else 10**_MAX_DIGITS


class Pagination(LimitOffsetPagination):
    max_limit = MAX_LIMIT

    def get_limit(self, request):
        limit = _whole_number(request, self.limit_query_param, minimum=1)
        return self.default_limit if limit is None else min(limit, self.max_limit)

    def get_offset(self, request):
        return _whole_number(request, self.offset_query_param, minimum=0) or 0

    def get_schema_operation_parameters(self, view):
        # What the server checks: a `limit` above MAX_LIMIT is capped, not refused.
        minimum = {self.limit_query_param: 1, self.offset_query_param: 0}
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = minimum[parameter["name"]]
        parameters[0]["description"] += f" At most {self.max_limit} are returned."
        return parameters
