from django.db import migrations, models

from learning.core.conllu import multiword_tokens


def fill_multiword(apps, schema_editor):
    """Sentences imported from CoNLL-U before: their multiword tokens, read from their lines."""
    Sentence = apps.get_model("annotation", "Sentence")
    changed = []
    for sentence in Sentence.objects.exclude(source="").only("id", "source").iterator(2000):
        found = multiword_tokens(sentence.source.split("\n"))
        if found:
            sentence.multiword = found
            changed.append(sentence)
        if len(changed) >= 2000:
            Sentence.objects.bulk_update(changed, ["multiword"])
            changed.clear()
    Sentence.objects.bulk_update(changed, ["multiword"])


class Migration(migrations.Migration):
    dependencies = [("annotation", "0008_verification_tasks")]

    operations = [
        migrations.AddField(
            model_name="sentence",
            name="multiword",
            field=models.JSONField(
                blank=True,
                help_text="CoNLL-U multiword tokens, as written: [start, length, form] each "
                '(French "au" for the words "à le"), or null. Annotators read these forms.',
                null=True,
            ),
        ),
        migrations.RunPython(fill_multiword, migrations.RunPython.noop),
    ]
