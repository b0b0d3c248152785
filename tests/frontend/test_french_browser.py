"""A French project on the phone and on the dashboard (issue 26, item 5): annotators read words as
written ("au", "des") while they count the words the tags belong to ("à" + "le"), and "try the
model" cuts text the way the corpus was cut."""

import io

import pytest

from annotation import services
from annotation.models import Membership, Observation, Task
from tests.frontend.conftest import DESKTOP, PHONE
from tests.frontend.test_annotate_browser import shown_lease
from tests.frontend.test_annotate_phone_browser import no_more_tasks, submit_says
from tests.support.crowd import answer_tasks
from tests.support.factories import UserFactory
from tests.support.learning import retrain_job

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# (written word or (contraction, [(word, tag), ...])) per sentence: UD French's multiword tokens.
FRENCH = [
    [("Il", "PRON"), ("va", "VERB"), ("au", [("à", "ADP"), ("le", "DET")]), ("marché", "NOUN"),
     ("des", [("de", "ADP"), ("les", "DET")]), ("fleurs", "NOUN"), (".", "PUNCT")],
    [("Elle", "PRON"), ("parle", "VERB"), ("du", [("de", "ADP"), ("le", "DET")]), ("livre", "NOUN"),
     (".", "PUNCT")],
    [("Nous", "PRON"), ("allons", "VERB"), ("aux", [("à", "ADP"), ("les", "DET")]),
     ("jardins", "NOUN"), (".", "PUNCT")],
    [("Le", "DET"), ("chat", "NOUN"), ("dort", "VERB"), ("au", [("à", "ADP"), ("le", "DET")]),
     ("soleil", "NOUN"), (".", "PUNCT")],
]  # fmt: skip


def conllu(sentences) -> bytes:
    out = []
    for sentence in sentences:
        lines, n = [], 0
        for written, tagged in sentence:
            if isinstance(tagged, str):
                n += 1
                lines.append(f"{n}\t{written}\t_\t{tagged}\t_\t_\t0\t_\t_\t_")
                continue
            lines.append(f"{n + 1}-{n + len(tagged)}\t{written}\t_\t_\t_\t_\t_\t_\t_\t_")
            for word, tag in tagged:
                n += 1
                lines.append(f"{n}\t{word}\t_\t{tag}\t_\t_\t0\t_\t_\t_")
        out.append("\n".join(lines) + "\n\n")
    return "".join(out).encode()


@pytest.fixture
def french(manager):
    project = services.project_create(
        owner=manager, name="Marché", tag_preset="ud_upos", language="fr", window_size=4,
        tags_per_task=2, redundancy=1,
    )  # fmt: skip
    services.corpus_import(
        project=project, user=manager, file=io.BytesIO(conllu(FRENCH * 10)),
        filename="fr.conllu", format="conllu", max_bytes=10**6, seed=0, evaluation_fraction=0.0,
    )  # fmt: skip
    return project


def test_annotators_read_au_and_count_a_and_le(new_context, french):
    names = list(french.tags.order_by("position").values_list("name", flat=True))
    adp, det = names.index("ADP"), names.index("DET")
    first = french.sentences.order_by("position").first()
    assert first.tokens[:4] == ["Il", "va", "à", "le"]
    assert first.multiword == [[2, 2, "au"], [5, 2, "des"]]
    # One task: the window "va à le marché" (written "va au marché"), asking ADP and DET.
    keep = Task.objects.filter(project=french, sentence=first).first()
    Task.objects.filter(project=french).exclude(pk=keep.pk).delete()
    Task.objects.filter(pk=keep.pk).update(start=1, length=4, tags=[adp, det])
    user = UserFactory(username="lecteur")
    Membership.objects.create(project=french, user=user, role=Membership.Role.ANNOTATOR)

    page = new_context(user, **PHONE).new_page()
    page.goto(f"/annotate/{french.pk}/")
    lease = shown_lease(page)
    no_more_tasks(page)
    assert page.inner_text("#sentence mark") == "va au marché"
    sentence = page.inner_text("#sentence")
    assert "à le" not in sentence and "de les" not in sentence
    assert "des fleurs" in sentence
    note = page.inner_text("#sentence .written-note")
    assert note == "« au » = à + le : compte pour 2 mots, une étiquette chacun"
    assert "des" not in note  # outside the window: nothing to count there
    # The page and the guidelines speak the project's language.
    assert page.get_attribute("html", "lang") == "fr"
    assert page.inner_text("#q0 h3") == "Combien de ADP dans la partie surlignée ?"
    assert page.inner_text("#q0 .guide").startswith("Préposition")
    submit_says(page, "Envoyer")  # both questions fit: Submit sends
    assert page.inner_text(".today .unit") == "aujourd’hui"
    # No horizontal scroll, and the questions still fit.
    assert page.evaluate("document.documentElement.scrollWidth") <= 360

    page.tap("#q0 .inc")
    page.tap("#q1 .inc")
    page.tap("#submit")
    page.wait_for_function("() => document.getElementById('today').textContent === '1'")
    assert Observation.objects.get(assignment_id=lease.pk).counts == [1, 1]


def test_the_state_screens_speak_french(new_context, french):
    """Issue 26, item 5: the screens the page's script sets (main.js) speak the project's
    language too: no task to give, then no connection."""
    french.tasks.all().delete()
    french.sentences.update(split="evaluation")  # nothing to make new tasks from
    user = UserFactory(username="lectrice")
    Membership.objects.create(project=french, user=user, role=Membership.Role.ANNOTATOR)
    context = new_context(user, **PHONE)
    page = context.new_page()
    page.goto(f"/annotate/{french.pk}/")
    page.wait_for_selector("text=Pas de tâche pour vous en ce moment")
    assert page.inner_text("#state-text").startswith("Tout ce qui était ouvert a reçu")
    assert page.inner_text("#state-action") == "Chercher à nouveau"

    # No connection (and no request left running on the server when the test ends).
    page.route("**/tasks/next/", lambda route: route.abort("internetdisconnected"))
    context.set_offline(True)
    page.tap("#state-action")
    page.wait_for_selector("text=Vous êtes hors ligne")
    assert page.inner_text("#state-text") == (
        "De nouvelles tâches apparaîtront au retour de la connexion."
    )
    assert "You are" not in page.inner_text("body")


def test_try_the_model_cuts_text_as_the_corpus_was_cut(
    new_context, french, manager, tokenizer_loaded
):
    annotators = [UserFactory(username=f"sim{i}") for i in range(2)]
    for user in annotators:
        Membership.objects.create(project=french, user=user, role=Membership.Role.ANNOTATOR)
    assert answer_tasks(french, annotators, 40 * len(annotators)) > 0
    retrain_job(french.pk)

    page = new_context(manager, **DESKTOP).new_page()
    page.goto(f"/projects/{french.pk}/")
    page.wait_for_selector("#kpis .kpi")
    page.fill("#try-text", "Le chat va au marché des fleurs.")
    page.click("#try button")
    page.wait_for_selector("#try-out .predicted li")
    words = page.locator("#try-out .predicted li .w").all_inner_texts()
    assert words == ["Le", "chat", "va", "à", "le", "marché", "de", "les", "fleurs", "."]


def test_try_the_model_shows_its_work_and_takes_one_call_at_a_time(
    new_context, french, manager, tokenizer_loaded
):
    """Issue 26, item 7: while the server tags, the button is disabled and says so, and a
    second tap sends nothing; the dashboard has the server load the project's tokenizer and
    model as it opens (learning.predictions.warm_up)."""
    annotators = [UserFactory(username=f"sim{i}") for i in range(2)]
    for user in annotators:
        Membership.objects.create(project=french, user=user, role=Membership.Role.ANNOTATOR)
    answer_tasks(french, annotators, 40 * len(annotators))
    retrain_job(french.pk)

    page = new_context(manager, **DESKTOP).new_page()
    held = []
    page.route("**/predict/", lambda route: held.append(route))
    page.goto(f"/projects/{french.pk}/")
    page.wait_for_selector("#kpis .kpi")  # the page's script runs: the form is its
    page.fill("#try-text", "Le chat dort.")
    page.click("#try button")
    page.wait_for_selector("#try button:disabled")
    assert page.inner_text("#try button") == "Tagging…"
    assert page.inner_text("#try-out") == "Tagging your sentence…"
    assert page.get_attribute("#try-out", "aria-busy") == "true"
    page.press("#try-text", "Enter")  # a second submit while the first runs: nothing sent
    for _ in range(50):
        if held:
            break
        page.wait_for_timeout(100)
    page.wait_for_timeout(300)
    assert len(held) == 1
    held[0].continue_()
    page.wait_for_selector("#try-out .predicted li")
    assert page.is_enabled("#try button") and page.inner_text("#try button") == "Tag it"
    assert page.get_attribute("#try-out", "aria-busy") == "false"


def test_the_form_shows_the_guidelines_a_french_project_will_get(new_context, manager):
    page = new_context(manager, **DESKTOP).new_page()
    page.goto("/projects/new/")
    adp = page.locator("#tag-preview li", has_text="ADP")
    assert "Preposition or postposition." in adp.inner_text()
    page.select_option("#language", "fr")
    page.wait_for_function(
        "() => document.querySelector('#tag-preview').textContent.includes('Préposition')"
    )
    assert page.locator("#tag-preview li").count() == 17
