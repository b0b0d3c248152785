import pytest

from config.celery import app as celery_app


@pytest.mark.django_db
def test_healthy_when_database_and_broker_answer(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"]["ok"] and body["checks"]["broker"]["ok"]


@pytest.mark.django_db
def test_unavailable_names_the_broker_when_it_is_down(client, monkeypatch):
    # Nothing listens on port 1: a real refused connection, not a mock.
    monkeypatch.setitem(celery_app.conf, "CELERY_BROKER_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setitem(
        celery_app.conf, "CELERY_BROKER_TRANSPORT_OPTIONS", {"socket_connect_timeout": 1}
    )
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"]["ok"]
    assert not body["checks"]["broker"]["ok"]
    assert "refused" in body["checks"]["broker"]["error"].lower()


@pytest.mark.redis
@pytest.mark.django_db
def test_healthy_on_redis(client, settings):
    # Under CI's full mode REDIS_URL is set and the broker is Redis.
    assert celery_app.conf.broker_url.startswith("redis://")
    assert client.get("/healthz").status_code == 200
