"""Visual tokenizers, action discretisation and the video world model (see DESIGN.md §2)."""
