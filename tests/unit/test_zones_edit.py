"""`ZonesDraft`, what the viewer's zones editor changes: always a valid zones file's content."""

from __future__ import annotations

import pytest

from app.analytics.zones_edit import Handle, ZonesDraft
from app.analytics.zones_file import LineSpec, ZonesConfig, ZoneSpec

SQUARE = [(100.0, 100.0), (200.0, 100.0), (200.0, 200.0), (100.0, 200.0)]


def test_shapes_get_free_names_and_degenerate_ones_are_refused() -> None:
    draft = ZonesDraft()
    assert draft.add_line((0, 0), (0, 1.0)) is None, "a click without a drag is no line"
    assert draft.add_line((10, 0), (10, 100)) == "line 1"
    assert draft.add_line((20, 0), (20, 100)) == "line 2"
    assert draft.add_zone([(0, 0), (10, 10)]) is None, "two points are no zone"
    assert draft.add_zone([(0, 0), (10, 10), (20, 20)]) is None, "points in a row have no area"
    assert draft.add_zone(SQUARE) == "zone 1"
    draft.delete("line", 0)
    assert draft.add_line((30, 0), (30, 100)) == "line 1", "the first free number again"
    config = draft.config()
    assert ZonesConfig.from_dict(config.to_dict()) == config, "what it gives reads back as a zones file"


def test_rename_refuses_an_empty_name_or_one_in_use_and_swap_turns_in_into_out() -> None:
    draft = ZonesDraft(ZonesConfig((LineSpec("door", (0, 0), (0, 10)),), (ZoneSpec("q", tuple(SQUARE)),)))
    with pytest.raises(ValueError, match="empty"):
        draft.rename("line", 0, "  ")
    draft.add_line((5, 0), (5, 10), "gate")
    with pytest.raises(ValueError, match="already named 'door'"):
        draft.rename("line", 1, "door")
    draft.rename("line", 1, "exit")
    draft.rename("zone", 0, "door")  # a zone and a line may share a name
    assert [line.name for line in draft.lines] == ["door", "exit"] and draft.zones[0].name == "door"
    draft.swap(0)
    assert draft.lines[0] == LineSpec("door", (0, 10), (0, 0))


def test_vertices_and_shapes_are_found_near_the_mouse_and_moved() -> None:
    draft = ZonesDraft()
    draft.add_zone(SQUARE)
    draft.add_line((150, 50), (150, 250))
    assert draft.vertex_at((151, 52), 5) == Handle("line", 0, 0), "a line's end is on top"
    assert draft.vertex_at((198, 198), 5) == Handle("zone", 0, 2)
    assert draft.vertex_at((160, 160), 5) is None
    assert draft.shape_at((152, 160), 5) == ("line", 0)
    assert draft.shape_at((120, 180), 5) == ("zone", 0)
    assert draft.shape_at((300, 300), 5) is None
    assert draft.move(Handle("zone", 0, 2), (250, 260))
    assert draft.zones[0].polygon[2] == (250, 260)
    assert not draft.move(Handle("line", 0, 0), (150, 250)), "onto its other end: refused"
    assert draft.point_of(Handle("line", 0, 0)) == (150, 50)
