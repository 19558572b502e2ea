"""The console deployed as docs/operations.md says: its environment, daphne --proxy-headers, and
(where Debian's nginx is installed) the nginx recipe over TLS with a self-signed certificate."""

from __future__ import annotations

import http.client
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from websockets.sync.client import connect

from tests.support.processes import ROOT
from tests.support.production_env import production_env
from tests.support.wait import wait_for
from workers.redis.embedded import free_port

pytestmark = pytest.mark.e2e

HOST = "streamdesk.example.com"
ORIGIN = f"https://{HOST}"
PASSWORD = "proxy-test-password-1"
# The headers the recipe's nginx sets on every request it passes on.
PROXY_HEADERS = {"Host": HOST, "X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}


@dataclass
class Browser:
    """Just enough of a browser: one connection factory, a cookie jar, the page's origin."""

    connection: Any
    headers: dict[str, str]
    cookies: dict[str, str] = field(default_factory=dict)

    def request(self, method: str, path: str, body: str | None = None) -> http.client.HTTPResponse:
        headers = dict(self.headers)
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if body is not None:
            headers.update(
                {
                    "Content-Type": "application/x-www-form-urlencoded",
                    "Origin": ORIGIN,
                    "Referer": f"{ORIGIN}{path}",
                }
            )
        conn = self.connection()
        conn.request(method, path, body=body, headers=headers)
        response: http.client.HTTPResponse = conn.getresponse()
        response.read()
        for raw in response.headers.get_all("Set-Cookie") or []:
            cookie = SimpleCookie(raw)
            for name, morsel in cookie.items():
                assert morsel["secure"], f"{name} cookie sent without Secure"
                self.cookies[name] = morsel.value
        conn.close()
        return response

    def sign_in(self) -> http.client.HTTPResponse:
        assert self.request("GET", "/login/").status == 200
        form = urlencode(
            {
                "username": "ops",
                "password": PASSWORD,
                "csrfmiddlewaretoken": self.cookies["csrftoken"],
            }
        )
        return self.request("POST", "/login/", form)


@pytest.fixture
def daphne(worker_env: dict[str, str], tmp_path: Path) -> Iterator[int]:
    User.objects.create_user("ops", password=PASSWORD, is_staff=True, is_superuser=True)
    env = production_env(
        REDIS_URL=worker_env["REDIS_URL"],
        DATABASE_URL=worker_env["DATABASE_URL"],
        STREAMDESK_DATA_DIR=str(tmp_path / "data"),
    )
    port = free_port()
    cmd = ["-m", "daphne", "--proxy-headers", "-b", "127.0.0.1", "-p", str(port)]
    with open(tmp_path / "daphne.log", "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, *cmd, "console.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    plain = Browser(lambda: http.client.HTTPConnection("127.0.0.1", port, timeout=5), PROXY_HEADERS)

    def ready() -> bool:
        assert proc.poll() is None, (tmp_path / "daphne.log").read_text()
        try:
            return plain.request("GET", "/login/").status == 200
        except OSError:
            return False

    try:
        wait_for(ready, what="daphne behind the proxy headers")
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)


def test_sign_in_with_the_proxy_headers_of_the_recipe(daphne: int) -> None:
    browser = Browser(
        lambda: http.client.HTTPConnection("127.0.0.1", daphne, timeout=5), PROXY_HEADERS
    )
    response = browser.sign_in()
    assert response.status == 302, response.status
    assert response.headers["Location"] == "/"
    assert browser.request("GET", "/").status == 200


def test_plain_http_without_the_proxy_is_redirected_to_https(daphne: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", daphne, timeout=5)
    conn.request("GET", "/login/", headers={"Host": HOST})
    response = conn.getresponse()
    response.read()
    conn.close()
    assert response.status == 301
    assert response.headers["Location"] == f"{ORIGIN}/login/"


NGINX_MAIN = """
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{}}
http {{
    access_log {dir}/access.log;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    {servers}
}}
"""


def nginx_servers(tmp: Path, http_port: int, https_port: int, daphne_port: int) -> str:
    """The recipe's two server blocks, pointed at this test's ports, certificate and files."""
    page = (ROOT / "docs" / "operations.md").read_text()
    recipe = re.search(r"```nginx\n(.*?)```", page, re.S)
    assert recipe, "docs/operations.md lost its nginx recipe"
    return (
        recipe.group(1)
        .replace("listen 80;", f"listen 127.0.0.1:{http_port};")
        .replace("listen 443 ssl;", f"listen 127.0.0.1:{https_port} ssl;")
        .replace("/etc/ssl/certs/streamdesk.pem", str(tmp / "cert.pem"))
        .replace("/etc/ssl/private/streamdesk.key", str(tmp / "key.pem"))
        .replace("/srv/streamdesk/staticfiles/", f"{ROOT / 'static'}/")
        .replace("http://127.0.0.1:8000", f"http://127.0.0.1:{daphne_port}")
    )


@pytest.fixture
def nginx(daphne: int, tmp_path: Path) -> Iterator[int]:
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(binary).exists():
        pytest.skip("Debian's nginx is not installed (apt-get install nginx-light)")
    key, cert = str(tmp_path / "key.pem"), str(tmp_path / "cert.pem")
    self_signed = ["-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={HOST}"]
    san = ["-addext", f"subjectAltName=DNS:{HOST}"]
    subprocess.run(
        ["openssl", "req", *self_signed, *san, "-keyout", key, "-out", cert],
        check=True,
        capture_output=True,
    )
    http_port, https_port = free_port(), free_port()
    servers = nginx_servers(tmp_path, http_port, https_port, daphne)
    (tmp_path / "nginx.conf").write_text(NGINX_MAIN.format(dir=tmp_path, servers=servers))
    proc = subprocess.Popen(
        [binary, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(lambda: _listening(https_port, proc, tmp_path), what="nginx")
        yield https_port
    finally:
        proc.send_signal(signal.SIGQUIT)
        proc.wait(timeout=15)


def _listening(port: int, proc: subprocess.Popen[bytes], tmp: Path) -> bool:
    assert proc.poll() is None, (tmp / "error.log").read_text()
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def tls(port: int, tmp: Path) -> http.client.HTTPSConnection:
    context = ssl.create_default_context(cafile=str(tmp / "cert.pem"))
    conn = http.client.HTTPSConnection(HOST, port, timeout=5, context=context)
    # The certificate names the host; the socket goes to loopback.
    conn.sock = context.wrap_socket(
        socket.create_connection(("127.0.0.1", port), timeout=5), server_hostname=HOST
    )
    return conn


def test_sign_in_and_live_socket_through_nginx_over_tls(nginx: int, tmp_path: Path) -> None:
    browser = Browser(lambda: tls(nginx, tmp_path), {"Host": HOST})
    response = browser.sign_in()
    assert response.status == 302, response.status
    assert browser.request("GET", "/").status == 200
    assert browser.request("GET", "/static/console/console.css").status == 200  # nginx serves it

    context = ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))
    sock = socket.create_connection(("127.0.0.1", nginx), timeout=5)
    cookie = "; ".join(f"{k}={v}" for k, v in browser.cookies.items())
    with connect(
        f"wss://{HOST}/ws/dashboard/",
        sock=sock,
        ssl=context,
        server_hostname=HOST,
        additional_headers={"Origin": ORIGIN, "Cookie": cookie},
        open_timeout=10,
    ) as live:
        assert live.recv(timeout=10)  # the first live fragment
