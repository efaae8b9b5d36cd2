"""jvm-diagnostics alerting mixin: CONFIG (config.py) + one module per alert area."""
