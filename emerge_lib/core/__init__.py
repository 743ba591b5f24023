"""Foundations every room stands on: the typed configuration (``config``), errors with a
``retryable`` verdict (``errors``), snapshot and window arithmetic (``schedule``), the
CPU and core figures (``resources``), the Spark Connect engine (``engine``) and the stage
contract (``stage``: what a stage declares, what it is given, what it returns).

Imports nothing else of emerge_lib.
"""
