"""The heat map: seconds per cell, a window that forgets, and a colour overlay / PNG."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from app.analytics.heatmap import HeatMap


def test_each_sighting_adds_the_time_it_stands_for_to_its_cell() -> None:
    heat = HeatMap(100, 60, cell=10)
    assert heat.density().shape == (6, 10)
    heat.add(np.array([[5, 5], [5, 5], [99.9, 59.9], [100, 60], [150, 5], [-1, 5]]), 0.0, 0.5)
    d = heat.density()
    assert d[0, 0] == 1.0  # two sightings
    assert d[5, 9] == 1.0  # the last cell, and the frame's far edge (a box touching the bottom)
    assert d.sum() == 2.0  # outside the frame: left out


def test_a_window_keeps_only_the_last_seconds() -> None:
    heat = HeatMap(100, 100, cell=10, window_s=10.0, buckets=10)  # 1 s slices
    for t in range(30):  # one sighting per second, moving right along the top row
        heat.add(np.array([[t * 3 + 1, 5]]), float(t), 1.0)
    d = heat.density()
    assert d.sum() == pytest.approx(10.0)  # seconds 20..29
    assert d[0, :6].sum() == 0 and d[0, 6:].sum() == pytest.approx(10.0)  # x 61..88: cells 6..8
    # A quiet stream: time moving on empties the map.
    assert heat.density(now_s=35.0).sum() == pytest.approx(4.0)  # seconds 26..29
    assert heat.density(now_s=60.0).sum() == 0.0


def test_without_a_window_everything_is_kept() -> None:
    heat = HeatMap(100, 100, cell=10)
    for t in range(100):
        heat.add(np.array([[50, 50]]), t * 100.0, 1.0)
    assert heat.density(now_s=1e6).sum() == pytest.approx(100.0)


def test_the_overlay_colours_where_objects_were_and_leaves_the_rest() -> None:
    heat = HeatMap(160, 120, cell=16)
    heat.add(np.array([[40, 40]] * 10 + [[120, 100]]), 0.0, 1.0)
    background = np.full((120, 160, 3), 100, np.uint8)
    out = heat.render(background)
    assert out.shape == background.shape and out.dtype == np.uint8
    hot, cold, corner = out[40, 40].astype(int), out[100, 120].astype(int), out[5, 150].astype(int)
    assert hot[0] > 100 > hot[2] and hot[0] > hot[1]  # reddened grey where it was hottest
    assert not np.array_equal(cold, [100, 100, 100])  # seen once: faintly coloured
    assert corner.tolist() == [100, 100, 100]  # never seen: the picture untouched
    assert np.array_equal(background, np.full((120, 160, 3), 100, np.uint8))  # not drawn on in place
    # Any frame size: the map is stretched over it.
    stretched = heat.render(np.zeros((240, 320, 3), np.uint8))[80, 80].astype(int)
    assert stretched[0] > 40 and stretched[0] > 2 * stretched[2]


def test_an_empty_map_is_the_frame_itself_and_a_png_reads_back(tmp_path: Path) -> None:
    heat = HeatMap(64, 48)
    frame = np.random.default_rng(1).integers(0, 255, (48, 64, 3), dtype=np.uint8)
    assert np.array_equal(heat.render(frame), frame)
    heat.add(np.array([[10, 10]]), 0.0, 1.0)
    path = tmp_path / "heat.png"
    heat.save_png(path, frame)
    read = cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)
    assert np.array_equal(read, heat.render(frame))
    assert heat.render().shape == (48, 64, 3)  # over black at the map's size


def test_the_layer_alone_is_transparent_where_nothing_was_seen() -> None:
    heat = HeatMap(160, 120, cell=16)
    assert heat.layer_rgba().shape == (32, 40, 4) and not heat.layer_rgba().any()
    heat.add(np.array([[40, 40]]), 0.0, 1.0)
    layer = heat.layer_rgba((160, 120))
    assert layer.shape == (120, 160, 4)
    assert layer[40, 40, 3] > 100 and layer[40, 40, 0] > layer[40, 40, 2]  # opaque-ish and red
    assert layer[110, 150, 3] == 0


def test_a_heat_map_needs_a_size() -> None:
    with pytest.raises(ValueError, match="needs a frame size"):
        HeatMap(0, 10)
