"""Fingerprints are stable across line numbers and ids in messages (issue 32): real
tracebacks, raised here and formatted as a dead letter keeps them (``describe``)."""

from __future__ import annotations

import json
import sys
import sysconfig
import textwrap
import uuid

from workers.core.storable import describe
from workers.errors import PathRoots, fingerprint, normalise, parse

ROOTS = PathRoots(tuple(p for p in sys.path if p), (sysconfig.get_paths()["stdlib"],))


def raised(source: str, name: str = "agent_code", padding: int = 0) -> str:
    """The traceback text of running ``source`` (its function ``handler``) as a module
    file, ``padding`` blank lines above it: the same code at other line numbers."""
    code = compile("\n" * padding + textwrap.dedent(source), f"/srv/app/billing/{name}.py", "exec")
    namespace: dict[str, object] = {}
    exec(code, namespace)
    try:
        namespace["handler"]()  # type: ignore[operator]
    except Exception as exc:
        return describe(exc)
    raise AssertionError("handler did not raise")


ORDER_MISSING = """
def handler():
    order_id = {order!r}
    raise KeyError(f"order {{order_id}} not found at 0x7f3a2c1b9e10 ({{order_id}})")
"""


def test_fingerprint_same_across_line_numbers() -> None:
    a = raised(ORDER_MISSING.format(order="ord-1"), padding=0)
    b = raised(ORDER_MISSING.format(order="ord-1"), padding=40)
    assert "line 4," in a and "line 44," in b
    assert fingerprint(a, roots=ROOTS) == fingerprint(b, roots=ROOTS)


def test_fingerprint_same_across_ids_in_messages() -> None:
    texts = [
        raised(ORDER_MISSING.format(order=str(uuid.uuid4()))),
        raised(ORDER_MISSING.format(order="9f86d081884c7d659a2feaa0c55ad015")),
        raised(ORDER_MISSING.format(order=12345)),
    ]
    prints = {fingerprint(t, roots=ROOTS) for t in texts}
    assert len(prints) == 1
    (found,) = prints
    assert found.kind == "KeyError"
    assert found.frame == "agent_code.handler"  # outside every search root: its file's name


def test_fingerprint_differs_by_exception_type() -> None:
    a = raised("def handler():\n    raise KeyError('x')\n")
    b = raised("def handler():\n    raise ValueError('x')\n")
    assert fingerprint(a).digest != fingerprint(b).digest


def test_fingerprint_differs_by_function() -> None:
    a = raised("def handler():\n    raise KeyError('x')\n")
    b = raised("def other():\n    raise KeyError('x')\n\ndef handler():\n    other()\n")
    assert fingerprint(a).frame == "agent_code.handler"
    assert fingerprint(b).frame == "agent_code.other"


def test_fingerprint_top_frame_is_the_agents_not_a_librarys() -> None:
    # json.loads fails inside the standard library: the agent's own frame names the group.
    text = raised("import json\ndef handler():\n    return json.loads('{nope')\n")
    assert "json/decoder.py" in text
    found = fingerprint(text, roots=ROOTS)
    assert found.kind == "json.decoder.JSONDecodeError"
    assert found.frame == "agent_code.handler"
    assert (
        found.message
        == "Expecting property name enclosed in double quotes: line <num> column <num> (char <num>)"
    )


def test_fingerprint_module_from_the_search_root() -> None:
    roots = PathRoots(("/srv/app",), ())
    text = raised("def handler():\n    raise RuntimeError('boom')\n")
    assert fingerprint(text, roots=roots).frame == "billing.agent_code.handler"


def test_fingerprint_engine_frames_are_not_the_agents() -> None:
    text = textwrap.dedent(
        """\
        Traceback (most recent call last):
          File "/opt/app/workers/engine/invoke.py", line 88, in run_agent
            return await handler(event, ctx)
          File "/opt/app/shop/agents.py", line 12, in refund
            await ctx.step("charge", charge)
          File "/opt/app/workers/runtime/context.py", line 140, in step
            return fn()
        ValueError: card 4242 declined
        """
    )
    found = fingerprint(text, roots=PathRoots(("/opt/app",), ()))
    assert found.frame == "shop.agents.refund"
    assert found.message == "card <num> declined"


def test_fingerprint_of_a_chained_exception_is_the_last() -> None:
    source = """
def handler():
    try:
        {}["k"]
    except KeyError as exc:
        raise RuntimeError("lookup failed for 17") from exc
"""
    found = fingerprint(raised(source))
    assert found.kind == "RuntimeError"
    assert found.message == "lookup failed for <num>"


def test_fingerprint_without_a_traceback_uses_the_reason() -> None:
    a = fingerprint("unknown event type 'shop.order.v2'", reason="unknown-type")
    b = fingerprint("unknown event type 'shop.refund'", reason="unknown-type")
    assert a == b
    assert a.kind == "reason:unknown-type"
    assert a.frame == ""


def test_parse_reads_frames_and_message() -> None:
    parsed = parse(raised("def handler():\n    raise ValueError('a\\nb')\n"))
    assert parsed.kind == "ValueError"
    assert parsed.message == "a\nb"
    assert [f.function for f in parsed.frames][-1] == "handler"


def test_normalise_placeholders() -> None:
    message = (
        "entry 1733412345678-0 of user 'bob' at 2026-12-06T15:04:05Z from 10.0.0.7:6379 "
        "id 123e4567-e89b-12d3-a456-426614174000 obj <Foo at 0xdeadbeef> sha deadbeef12 took 3.5 s"
    )
    assert normalise(message) == (
        "entry <id> of user <str> at <date> from <ip> id <uuid> obj <Foo at <hex>> "
        "sha <hex> took <num> s"
    )


def test_normalise_keeps_numbers_inside_words() -> None:
    assert normalise("utf8 codec, v2 api, 500 errors") == "utf8 codec, v2 api, <num> errors"


def test_fingerprint_of_an_elided_traceback() -> None:
    # describe() keeps both ends of a huge traceback: the end still names the error.
    huge = raised("def handler():\n    raise ValueError('x' * 20000)\n")
    assert "\n...\n" in huge
    assert fingerprint(huge).kind == "ValueError"
    assert json.dumps(fingerprint(huge).message)
