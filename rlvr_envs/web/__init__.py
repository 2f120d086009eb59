"""Web-page state prediction: the accessibility-tree format, change F1, the WMA loader,
the MiniWeb simulator and the tasks built on them."""
