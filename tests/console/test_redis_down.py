"""Redis out of reach: 503 with a clear answer from pages, the API and sign-in (whose
throttle needs Redis: it refuses rather than let guesses through uncounted)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

from tests.support.cluster import kill_nodes, private_cluster
from workers import from_settings
from workers.redis.embedded import free_port

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def redis_down() -> Iterator[None]:
    with override_settings(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0"):
        yield


def test_page_redis_down_is_503(redis_down: None, staff_client: Client) -> None:
    response = staff_client.get("/")
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert b"The console cannot reach Redis" in response.content


def test_api_redis_down_is_503_json(redis_down: None, staff_client: Client) -> None:
    response = staff_client.get("/api/streams/")
    assert response.status_code == 503
    assert response.json()["error"].startswith("Redis cannot be reached")


def test_login_redis_down_is_503(redis_down: None, staff: User) -> None:
    response = Client().post("/login/", {"username": "operator", "password": "pw-operator"})
    assert response.status_code == 503 and "_auth_user_id" not in Client().session


def test_audit_page_redis_down_still_works(redis_down: None, staff_client: Client) -> None:
    assert staff_client.get("/audit/").status_code == 200


def test_a_cluster_with_every_node_gone_is_a_503(staff_client: Client) -> None:
    """The cluster client, its nodes all killed, raises its own exception (not a
    RedisError): still an outage, said as one."""
    with private_cluster() as cluster, override_settings(REDIS_URL=cluster.url):
        from_settings._client.cache_clear()
        try:
            assert staff_client.get("/").status_code == 200  # the client knows the nodes
            kill_nodes(cluster)
            page = staff_client.get("/")
            api = staff_client.get("/api/streams/")
        finally:
            from_settings._client.cache_clear()
    assert page.status_code == 503 and page["Retry-After"]
    assert api.status_code == 503
