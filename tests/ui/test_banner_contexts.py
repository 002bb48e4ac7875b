"""The red banner never contradicts the window: each error belongs to a context (the
connection, a batch, the live stream) and goes when that context changes; messages lead
with what happened and what to do, the raw detail behind "Details"."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot
from skimage import data

from app.inference.transports.channel import ConnectionOptions
from app.pipeline.connection.state import ConnectionState
from app.server.embedded import EmbeddedServer
from app.ui.widgets.banner import Context, ErrorBanner, split_detail
from tests.media import make_index_video
from tests.ui.test_viewer_window import job_done
from tests.ui.viewer_fixtures import Harness, image_folder, until


def test_split_detail_keeps_the_lead_and_the_raw_detail_apart() -> None:
    message = (
        "cannot reach Triton at 127.0.0.1:8000: something answers there but does not speak gRPC. "
        "Is this Triton's HTTP port? The viewer speaks gRPC, usually port 8001 "
        "(failed to connect to all addresses; last error: UNAVAILABLE: (http1 framing))"
    )
    lead, detail = split_detail(message)
    assert lead.endswith("usually port 8001") and lead.startswith("cannot reach Triton")
    assert detail.startswith("failed to connect") and detail.endswith("(http1 framing)")
    assert split_detail("photo.png: cannot read (frame 3)") == ("photo.png: cannot read (frame 3)", "")
    assert split_detail("no detail here") == ("no detail here", "")


def test_the_banner_never_shows_a_header_value_or_a_urls_password(qtbot: QtBot) -> None:
    ConnectionOptions(headers={"authorization": "Bearer BannerT0ken"})  # the viewer's connection
    banner = ErrorBanner()
    qtbot.addWidget(banner)
    banner.show_error(
        "cannot reach http://u:BannerPw@h:8000 (401: token bannert0ken refused)", Context.CONNECTION
    )
    shown = banner.text() + banner.message.text() + banner.detail.text()
    assert "BannerPw" not in shown and "bannert0ken" not in shown.lower()
    assert banner.text() == "cannot reach http://u:***@h:8000 (401: token *** refused)"


def test_banner_contexts_replace_and_clear(qtbot: QtBot) -> None:
    banner = ErrorBanner()
    qtbot.addWidget(banner)
    banner.show()
    banner.show_error("model 'nope' not found on a:1; models there: face_detector", Context.CONNECTION)
    banner.show_error("a.png: corrupt (libpng error: IHDR: CRC error in the header)", Context.BATCH)
    banner.show_error("b.png: corrupt (libpng error: IHDR: CRC error in the header)", Context.BATCH)
    assert banner.context() is Context.BATCH and banner.count() == 2
    assert banner.lead() == "b.png: corrupt" and banner.count_label.text() == "\u00d72"
    assert banner.details_button.isVisible() and not banner.detail.isVisible()
    banner.details_button.click()
    assert banner.detail.isVisible() and "CRC error" in banner.detail.text()
    banner.clear(Context.BATCH)  # a new batch: the connection's error shows again
    assert banner.context() is Context.CONNECTION and "nope" in banner.text()
    assert not banner.details_button.isVisible()
    banner.clear(Context.CONNECTION)  # reconnected
    assert banner.isHidden() and banner.context() is None
    # An outage as it stands now: its text replaced, with Details, never counted again.
    banner.update_error(
        "the server does not answer; retrying every 0.5 s ([StatusCode.UNAVAILABLE] Server exiting)",
        Context.CONNECTION,
    )
    banner.update_error(
        "the server has not answered for 8 s; retrying every 0.5 s (failed to connect to all addresses)",
        Context.CONNECTION,
    )
    assert banner.count() == 1 and banner.lead().startswith("the server has not answered for 8 s")
    assert "Server exiting" not in banner.text() and banner.details_button.isVisible()
    banner.details_button.click()
    assert "failed to connect to all addresses" in banner.detail.text()


@pytest.mark.gui
@pytest.mark.slow
def test_reconnecting_clears_the_connection_error_and_a_failed_connect_clears_the_model(
    harness: Harness, triton: EmbeddedServer
) -> None:
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    panel, banner = viewer.window.server_panel, viewer.window.banner
    assert "face_detector" in panel.details.toPlainText()
    viewer.connection.connect_to([triton.grpc_url], "nope")
    harness.run(until(lambda: viewer.connection.state is ConnectionState.FAILED, what="failed"))
    assert (
        banner.isVisible() and banner.context() is Context.CONNECTION and "'nope' not found" in banner.text()
    )
    assert panel.details.toPlainText() == "", "no model details left as if still valid"
    models = [panel.model_combo.itemData(i) for i in range(panel.model_combo.count())]
    assert "face_detector" in models and "slow_faces" in models, "the server's models are offered"
    assert panel.current_model() != "nope"
    panel.model_chosen.emit("face_detector")  # the user picks one from the list
    harness.connected(viewer)
    assert banner.isHidden(), "Connected: the connection's error is gone"
    assert "face_detector" in panel.details.toPlainText()

    # The HTTP port: the hint leads, in the banner, the state label and the status bar.
    viewer.connection.connect_to([triton.http_url], "face_detector")
    harness.run(until(lambda: viewer.connection.state is ConnectionState.FAILED, timeout=30, what="failed"))
    assert "HTTP port" in banner.lead() and "8001" in banner.lead()
    assert "HTTP port" in panel.state_text()
    assert "HTTP port" in viewer.window.statusBar().currentMessage()
    viewer.connection.connect_to([triton.grpc_url], "face_detector")
    harness.connected(viewer)
    assert banner.isHidden()


@pytest.mark.gui
@pytest.mark.slow
def test_a_batch_error_does_not_stay_over_later_live_video(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = image_folder(tmp_path / "batch", 2, data.coffee()[::8, ::8].copy(), corrupt=1)
    video = tmp_path / "v.avi"
    make_index_video(video, frames=30)
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(folder)])
    harness.run(until(lambda: job_done(viewer), what="batch"))
    banner = viewer.window.banner
    assert banner.context() is Context.BATCH and "corrupt_0.png" in banner.text()
    viewer.live_ui.open_source(str(video))
    harness.run(until(lambda: viewer.live.meter.shown >= 1, what="a live frame"))
    assert banner.isHidden(), "the batch's error is not shown over the live video"
    # A new batch with a bad file: its own error, cleared by the batch after it.
    viewer.open_paths([str(folder)])
    harness.run(until(lambda: banner.context() is Context.BATCH, what="the batch error"))
    good = image_folder(tmp_path / "good", 1, data.coffee()[::8, ::8].copy())
    harness.run(until(lambda: job_done(viewer), what="batch"))
    viewer.open_paths([str(good)])
    assert banner.isHidden()


@pytest.mark.gui
def test_an_empty_path_is_refused_with_a_word_and_the_others_open(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    good = image_folder(tmp_path / "good", 1, data.coffee()[::8, ::8].copy())
    viewer = harness.viewer(triton.grpc_url, "face_detector")
    harness.connected(viewer)
    viewer.open_paths(["", str(good)])  # "" would have been the current folder
    banner = viewer.window.banner
    assert banner.context() is Context.BATCH and "1 empty path(s) not opened" in banner.text()
    harness.run(until(lambda: job_done(viewer), what="batch"))
    counts = viewer.runner.latest_counts()
    assert counts is not None and (counts.total, counts.ok) == (1, 1)


@pytest.mark.gui
@pytest.mark.slow
def test_browsing_onto_a_broken_file_does_not_count_its_error_again(
    harness: Harness, triton: EmbeddedServer, tmp_path: Path
) -> None:
    folder = image_folder(tmp_path / "photos", 2, data.astronaut(), corrupt=1)
    viewer = harness.viewer(triton.grpc_url, "face_detector", open_paths=[str(folder)])
    harness.connected(viewer)
    harness.run(until(lambda: len(viewer.gallery.results) == 3 and not viewer.runner.active(), what="batch"))
    banner = viewer.window.banner
    harness.run(until(lambda: banner.context() is Context.BATCH, what="the broken file's error"))
    assert "corrupt_0.png" in banner.text() and banner.count() == 1
    broken = next(k for k in viewer.browser.visible() if "corrupt" in k)
    fine = next(k for k in viewer.browser.visible() if "corrupt" not in k)
    for key in (broken, fine, broken, fine, broken):
        viewer.browser.select(key)
        harness.run(until(lambda key=key: viewer.gallery.current_key == key and not viewer.gallery.busy()))
    assert banner.count() == 1, f"counted {banner.count()} times from browsing alone"
    harness.close(viewer)
