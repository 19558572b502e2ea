"""Issue 26, item 12: the admin's sign-in answers a locked-out user 429 with the wait, as the
console's does (it said "wrong password", with a 200)."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client, override_settings

from console.edge.throttle import ThrottleConfig

pytestmark = pytest.mark.django_db(transaction=True)

# Each wrong password costs a full hash: small limits keep the test short.
TWO = ThrottleConfig(per_user=2, per_address=100, window_s=900)


@override_settings(STREAMDESK_LOGIN_THROTTLE=TWO)
def test_admin_sign_in_of_a_locked_out_user_is_429(r: redis.Redis, db: Any) -> None:
    User.objects.create_superuser("root", "", "pw-root")
    client = Client(REMOTE_ADDR="10.0.0.9")
    for _ in range(2):
        wrong = client.post("/admin/login/", {"username": "root", "password": "wrong"})
        assert wrong.status_code == 200  # a wrong password is still said as one
    locked = client.post(
        "/admin/login/", {"username": "root", "password": "pw-root", "next": "/admin/"}
    )
    assert locked.status_code == 429 and int(locked["Retry-After"]) > 0
    assert "no-store" in locked["Cache-Control"]  # never cached, as the admin's own page
    assert "Too many failed sign-in attempts" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    assert client.get("/admin/login/").status_code == 200  # the form itself still shows


def test_admin_sign_in_still_signs_in(r: redis.Redis, db: Any) -> None:
    User.objects.create_superuser("root", "", "pw-root")
    client = Client()
    answer = client.post("/admin/login/", {"username": "root", "password": "pw-root"})
    assert answer.status_code == 302 and "_auth_user_id" in client.session
