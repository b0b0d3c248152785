"""factory_boy factories for the annotation models."""

import factory
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from annotation import services


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", "correct horse battery")

    @factory.post_generation
    def token(obj, create, extracted, **kwargs):
        if create:
            obj.save()
            Token.objects.get_or_create(user=obj)


TAGS = [
    {"name": "NOUN", "guideline": "A thing", "examples": ["dog"]},
    {"name": "VERB", "guideline": "An action", "examples": ["run"]},
    {"name": "DET", "guideline": "the, a", "examples": ["the"]},
    {"name": "ADJ", "guideline": "Describes", "examples": ["big"]},
]


def make_project(owner=None, **settings):
    """A project through the service (as the API makes it): tags, manager membership."""
    owner = owner or UserFactory()
    fields = {"name": "Test project", "tags": TAGS, "window_size": 3, "redundancy": 2}
    fields.update(settings)
    return services.project_create(owner=owner, **fields)
