"""Video world models: PushT, RT-1 and DINO-WM data, frame windows, action bins and
the frame metrics (the visual tokenizers, world model and tasks land here)."""
