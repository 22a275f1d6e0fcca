"""Shared settings of the property-based tests of the science code (Hypothesis): reproducible in CI (the same
examples every run, no example database in the tree), no deadline (two busy cores), few examples (each is a small
tensor computation; the properties are exact identities or agreement with a plain reference)."""
from hypothesis import HealthCheck, settings

SCIENCE = settings(derandomize=True, database=None, deadline=None, max_examples=25,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
