"""The API's parsers: request bodies read under the rules of `common.inputs`.

A JSON body that breaks them (malformed, nested too deeply, NaN or Infinity, a NUL or a lone
surrogate in any string) is a 400 `parse_error` that says why, and one larger than
`DATA_UPLOAD_MAX_MEMORY_SIZE` a 413; a form field holding a NUL is refused the same way. (DRF's
own JSON parser accepts NaN and Infinity, lets a too-deep body escape as a 500, and reads a body
of any size.)
"""

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser

from common import inputs
from common.exceptions import PayloadTooLarge


class JsonParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if stream else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"A JSON body is at most {limit} bytes.")
        try:
            text = raw.decode(encoding)
        except (LookupError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error - the body is not {encoding} text") from exc
        try:
            return inputs.load_json(text)
        except inputs.UnreadableInput as exc:
            raise ParseError(str(exc)) from exc


def _check_fields(data) -> None:
    for key, values in data.lists():
        inputs.check_text(key, "A form field name")
        for value in values:
            if isinstance(value, str):
                inputs.check_text(value, f"The form field {key!r}")


class FormParser(FormParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        try:
            _check_fields(data)
        except inputs.UnreadableInput as exc:
            raise ParseError(str(exc)) from exc
        return data


class MultiPartParser(MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):
        parsed = super().parse(stream, media_type, parser_context)
        try:
            _check_fields(parsed.data)
        except inputs.UnreadableInput as exc:
            raise ParseError(str(exc)) from exc
        return parsed
