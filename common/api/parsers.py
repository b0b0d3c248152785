"""The API's JSON parser."""

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class JsonParser(JSONParser):
    """DRF's JSON parser, but a body nested too deeply for Python's decoder is a 400 like any
    other malformed JSON, not a 500 (DRF catches only `ValueError`)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - nested too deeply") from exc
