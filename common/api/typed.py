"""Request serializers whose JSON values must have the JSON type the schema documents.

DRF converts what it can: `"5"` and `5.0` pass as the integer 5, `0` as the text "0", `"yes"` and
`1` as true. The schema promises a client the types it documents, and schemathesis found bodies
of the wrong type accepted (issue 24): in a JSON body a value of another type is a 400 that
names the field and the type. Form and multipart fields are text by nature and are read as DRF
reads them.
"""

from django.http import QueryDict
from rest_framework import serializers
from rest_framework.exceptions import ValidationError


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_whole_number(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _expected(field: serializers.Field) -> tuple | None:
    """(check, what is required) for the JSON values `field` takes; None: any value."""
    if isinstance(field, serializers.BooleanField):
        return (lambda value: isinstance(value, bool)), "true or false is required."
    if isinstance(field, serializers.IntegerField):
        return _is_whole_number, "A whole number is required."
    if isinstance(field, serializers.FloatField):
        return _is_number, "A number is required."
    if isinstance(field, serializers.ChoiceField):
        if all(isinstance(choice, str) for choice in field.choices):
            return (lambda value: isinstance(value, str)), "One of the choices, as text."
        return None
    if isinstance(field, serializers.CharField):
        return (lambda value: isinstance(value, str)), "Text is required."
    if isinstance(field, serializers.ListField | serializers.ListSerializer):
        return (lambda value: isinstance(value, list)), "A list is required."
    if isinstance(field, serializers.DictField | serializers.Serializer):
        return (lambda value: isinstance(value, dict)), "An object is required."
    return None


class TypedSerializer(serializers.Serializer):
    # A serializer of a JSON body: each field's value must have the field's JSON type (null is
    # left to the field's `allow_null`). A comment, not a docstring: the schema would show it
    # as the description of every body.

    def to_internal_value(self, data):
        if isinstance(data, dict) and not isinstance(data, QueryDict):
            errors = {}
            for name, field in self.fields.items():
                if field.read_only or data.get(name) is None:
                    continue
                expected = _expected(field)
                if expected is not None and not expected[0](data[name]):
                    errors[name] = [expected[1]]
                elif isinstance(field, serializers.ListField) and isinstance(data[name], list):
                    child = _expected(field.child)
                    if child is not None and not all(child[0](item) for item in data[name]):
                        errors[name] = [f"Each item: {child[1][0].lower()}{child[1][1:]}"]
            if errors:
                raise ValidationError(errors)
        return super().to_internal_value(data)
