"""Counting lines, zones and heat maps on live pictures: drawn with the mouse, remembered per
source, counted with app.analytics, their events listed in the Events panel."""
