"""Preset guidelines in the project's language (issue 26, item 5)."""

from annotation.tagsets import PRESETS, TRANSLATED, preset_tags


def test_a_french_project_gets_french_guidelines_for_the_same_tags():
    french = preset_tags("ud_upos", "fr")
    assert [t["name"] for t in french] == [t["name"] for t in PRESETS["ud_upos"]]
    adp = next(t for t in french if t["name"] == "ADP")
    assert adp["guideline"].startswith("Préposition") and "de" in adp["examples"]
    pairs = zip(french, PRESETS["ud_upos"], strict=True)
    assert all(t["guideline"] != e["guideline"] for t, e in pairs)


def test_english_or_an_untranslated_language_keeps_the_english_guidelines():
    assert preset_tags("ud_upos", "en") == PRESETS["ud_upos"]
    assert preset_tags("ud_upos", "nl") == PRESETS["ud_upos"]
    assert preset_tags("ptb", "fr") == PRESETS["ptb"]


def test_every_translation_names_tags_of_its_preset():
    for language, presets in TRANSLATED.items():
        for preset, tags in presets.items():
            assert set(tags) <= {t["name"] for t in PRESETS[preset]}, (language, preset)
