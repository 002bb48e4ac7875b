"""SessionSpec and open_session: one typed description of a session, the same session whoever
builds it (opened here through the session's channel seam, tests/fake_channel.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from app.inference.core.open_session import open_session
from app.inference.core.session import SessionState, TritonSession
from app.inference.core.spec import Delivery, Limits, ProfileSource, SessionSpec, Timeouts
from app.inference.profiles.profile import ProfileError
from app.inference.protocol import parse_endpoints
from app.inference.transports.channel import ConnectionOptions
from app.inference.transports.transport import TransportKind
from tests.fake_channel import MODEL, FakeServer, keep


def test_urls_and_version_are_normalised_and_no_url_means_the_embedded_server() -> None:
    assert SessionSpec(endpoints=parse_endpoints("h:1")).urls == ("h:1",)
    two = SessionSpec(endpoints=list(parse_endpoints(["a:1", "b:2"])))  # type: ignore[arg-type]
    assert two.endpoints == parse_endpoints(["a:1", "b:2"]) and two.urls == ("a:1", "b:2")
    assert SessionSpec(version=" 2 ").version == "2"
    assert SessionSpec().embedded and not SessionSpec(endpoints=parse_endpoints("h:1")).embedded
    with pytest.raises(ValueError, match="positive number of seconds"):
        Timeouts(request_s=0)
    with pytest.raises(ValueError, match="names no server"):
        TritonSession(SessionSpec())


def test_a_profile_file_is_read_when_the_session_opens_and_overrides_win(tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text('labels = ["cat", "dog"]\n\n[postprocess]\nscore_threshold = 0.6\n')
    source = ProfileSource(file=profile, overrides={"labels": ["owl"]})
    assert source.load() == {"labels": ["owl"], "score_threshold": 0.6}
    assert ProfileSource().load() is None
    missing = ProfileSource(file=tmp_path / "missing.toml")
    server = FakeServer()
    session = TritonSession(
        SessionSpec(endpoints=parse_endpoints("fake:8001"), profile=missing, channel_factory=server.factory)
    )
    with pytest.raises(ProfileError, match=r"missing\.toml: not found"):
        session.open()
    assert session.state is SessionState.UNOPENED and not server.channels  # read before connecting


def test_every_part_of_the_spec_reaches_the_session() -> None:
    server = FakeServer()
    spec = SessionSpec(
        endpoints=parse_endpoints("fake:8001"),
        model=MODEL,
        version="1",
        profile=ProfileSource(overrides={"labels": ["visage"]}),
        delivery=Delivery(TransportKind.GRPC, client_batch=4, batch_delay_ms=7.0),
        timeouts=Timeouts(request_s=3.0, retries=2, retry_backoff_s=0.1),
        connection=ConnectionOptions(headers={"x-team": "a"}, channels_per_server=1),
        limits=Limits(max_in_flight=5, decode_workers=1, send_in_caller=True),
        channel_factory=server.factory,
    )
    server.default = keep  # calls stay in flight: the window fills
    with open_session(spec) as session:
        assert session.spec is spec
        assert session.state is SessionState.OPEN
        assert session.info is not None and session.info.name == MODEL
        assert session.profile.labels == ("visage",)
        assert session.transport is not None and session.transport.kind is TransportKind.GRPC
        assert session.batching == 4 and "client batches of 4 (7 ms)" in session.describe_transport()
        image = np.zeros((48, 64, 3), np.uint8)
        sent = [session.submit(image, lambda _r: None, block=False) for _ in range(6)]
        assert None not in sent[:5] and sent[5] is None  # a window of 5
        calls = server.wait_for_calls(2)  # 4 batched at once, then 1 after the 7 ms delay
        assert all(c.model_version == "1" and c.headers == {"x-team": "a"} for c in calls)
        assert all(2.5 < c.timeout <= 3.0 for c in calls)  # each request's deadline
        assert len(server.channels) == 1  # one channel per server, as asked


def test_a_session_built_from_keywords_describes_itself_with_the_same_spec() -> None:
    session = TritonSession(
        SessionSpec(
            endpoints=parse_endpoints("h:1"),
            model="m",
            version="7",
            timeouts=Timeouts(request_s=4.0, retries=1),
            limits=Limits(max_in_flight=3),
            delivery=Delivery(client_batch=2),
        )
    )
    spec = session.spec
    assert spec.urls == ("h:1",) and spec.model == "m" and spec.version == "7"
    assert spec.timeouts == Timeouts(4.0, 1, 0.05)
    assert spec.delivery == Delivery(TransportKind.AUTO, 2, 2.0)
    assert spec.limits == Limits(3, 2, False)
    # A variant changes one part and keeps the others.
    other = dataclasses.replace(spec, model="n")
    assert (other.model, other.delivery, other.timeouts) == ("n", spec.delivery, spec.timeouts)


def test_on_created_sees_the_session_before_it_opens_and_can_abandon_it() -> None:
    seen: list[TritonSession] = []

    def abandon(session: TritonSession) -> None:
        seen.append(session)
        session.close(0.0)

    spec = SessionSpec(
        endpoints=parse_endpoints("fake:8001"), model=MODEL, channel_factory=FakeServer().factory
    )
    with pytest.raises(Exception, match="closed"):
        open_session(spec, on_created=abandon)
    assert len(seen) == 1 and seen[0].state is SessionState.CLOSED
