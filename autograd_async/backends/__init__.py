"""Device backends: one module per device type behind one interface (see base.py)."""
