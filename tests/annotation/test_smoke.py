from tests.annotation.conftest import client_for


def test_smoke(project, corpus, annotator, manager):
    c = client_for(annotator)
    r = c.post(f"/api/projects/{project.pk}/tasks/next/")
    assert r.status_code == 200, r.content
    task = r.json()
    counts = {t["name"]: 0 for t in task["tags"]}
    r = c.post(
        "/api/observations/",
        {
            "assignment": task["assignment"],
            "counts": counts,
            "idempotency_key": "k1",
            "seconds_on_device": 2.5,
        },
        format="json",
    )
    assert r.status_code == 201, r.content
    m = client_for(manager)
    for url in [
        "stats/",
        "observations/",
        "exports/observations.jsonl",
        "exports/observations.csv",
        "exports/corpus.conllu",
        "members/",
        "sentences/",
        "corpus/",
    ]:
        r = m.get(f"/api/projects/{project.pk}/{url}")
        assert r.status_code == 200, url
