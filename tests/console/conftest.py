"""Console fixtures: signed-in clients and a stream with real traffic through a real worker."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.contrib.auth.models import User
from django.test import Client

from tests.support.console import member_of, process
from workers import publish
from workers.core.config import EngineConfig

STREAM = "streamdesk:events"


@pytest.fixture
def staff(db: Any) -> User:
    return User.objects.create_user("operator", password="pw-operator", is_staff=True)


@pytest.fixture
def staff_client(staff: User) -> Client:
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def operator(db: Any) -> User:
    return member_of("ops", "operators")


@pytest.fixture
def operator_client(operator: User) -> Client:
    client = Client()
    client.force_login(operator)
    return client


@pytest.fixture
def viewer_client(db: Any) -> Client:
    client = Client()
    client.force_login(member_of("watcher", "viewers"))
    return client


@pytest.fixture
def plain_client(db: Any) -> Client:
    """Signed in, but not staff."""
    client = Client()
    client.force_login(User.objects.create_user("visitor", password="pw-visitor"))
    return client


@pytest.fixture
def traffic(r: redis.Redis, redis_url: str, config: EngineConfig) -> list[str]:
    """Three processed events and one dead letter on the default stream."""
    ids = [publish("demo.echo", {"n": n}, subject=f"order/{n}") for n in range(3)]
    ids.append(publish("demo.fail", {"message": "boom"}, subject="order/bad"))
    process(redis_url, config)
    return ids
