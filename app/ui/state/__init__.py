"""The viewer's state, Qt-free and evented (napari's model/view split): what the batch holds,
what is selected and shown, what the middle of the window shows, the live stream's state and
the statistics scope. Widgets and the menu actions subscribe to it and never hold the truth."""
