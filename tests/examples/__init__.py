"""Tests that run the examples, so they never rot."""
