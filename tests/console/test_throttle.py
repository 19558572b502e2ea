"""Failed sign-ins are throttled per user and per address, at every door that checks a
password (the console's login, the admin's) and for API tokens."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client, override_settings

from console.edge.throttle import ThrottleConfig

pytestmark = pytest.mark.django_db(transaction=True)

SMALL = ThrottleConfig(per_user=100, per_address=3, window_s=600)
# Each wrong password costs a full hash (about 0.3-1 s here): small limits keep tests short.
TWO = ThrottleConfig(per_user=2, per_address=100, window_s=900)


def login(password: str, username: str = "operator", address: str = "10.0.0.1") -> Any:
    return Client(REMOTE_ADDR=address).post("/login/", {"username": username, "password": password})


def test_login_after_five_failures_is_429_even_with_the_password(
    r: redis.Redis, staff: User
) -> None:
    for _ in range(5):
        response = login("wrong")
        assert response.status_code == 200 and b"Wrong username or password" in response.content
    response = login("pw-operator")
    assert response.status_code == 429
    assert b"Too many failed sign-in attempts: try again in 15 minutes." in response.content
    assert 890 <= int(response["Retry-After"]) <= 900


@override_settings(STREAMDESK_LOGIN_THROTTLE=TWO)
def test_login_failures_count_for_the_user_from_any_address(r: redis.Redis, staff: User) -> None:
    for n in range(2):
        login("wrong", address=f"10.0.1.{n}")
    assert login("pw-operator", address="10.0.2.1").status_code == 429


@override_settings(STREAMDESK_LOGIN_THROTTLE=TWO)
def test_login_username_case_does_not_reset_the_count(r: redis.Redis, staff: User) -> None:
    for name in ("operator", "OPERATOR"):
        login("wrong", username=name)
    assert login("pw-operator").status_code == 429


@override_settings(STREAMDESK_LOGIN_THROTTLE=TWO)
def test_login_success_clears_the_users_failures(r: redis.Redis, staff: User) -> None:
    login("wrong")
    assert login("pw-operator").status_code == 302
    login("wrong")
    assert login("pw-operator").status_code == 302


@override_settings(STREAMDESK_LOGIN_THROTTLE=SMALL)
def test_login_failures_count_for_the_address_across_users(r: redis.Redis, staff: User) -> None:
    for n in range(3):
        assert login("wrong", username=f"guess{n}").status_code == 200
    assert login("pw-operator").status_code == 429
    assert login("pw-operator", address="10.0.0.2").status_code == 302


@override_settings(STREAMDESK_LOGIN_THROTTLE=SMALL)
def test_login_ipv6_neighbours_share_a_count(r: redis.Redis, staff: User) -> None:
    for n in range(3):
        login("wrong", username=f"guess{n}", address=f"2001:db8::{n + 1}")
    assert login("pw-operator", address="2001:db8::ffff").status_code == 429
    assert login("pw-operator", address="2001:db8:0:1::1").status_code == 302


@override_settings(STREAMDESK_LOGIN_THROTTLE=TWO)
def test_admin_login_counts_and_is_refused_too(r: redis.Redis, db: Any) -> None:
    User.objects.create_superuser("root", "", "pw-root")
    client = Client(REMOTE_ADDR="10.0.0.9")
    for _ in range(2):
        client.post("/admin/login/", {"username": "root", "password": "wrong"})
    response = client.post("/admin/login/", {"username": "root", "password": "pw-root"})
    assert response.status_code == 429 and "_auth_user_id" not in client.session
    assert login("pw-root", username="root", address="10.0.0.10").status_code == 429
