"""One annotation renderer, its Qt-free half: the style every picture of a result is drawn with
(style.py) and the draw list built from a result and that style (draw_list.py). The view's items,
the PNG export and the recorded video all paint that draw list with app/ui/view/painter.py."""
