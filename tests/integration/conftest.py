"""Fixtures shared by several integration modules, found by pytest without an import: a test
takes ``kafka_bootstrap``, ``own_kafka``, ``topic_prefix``, ``registry_url``, ``spark``, ``delta`` (Spark with
Delta) or ``supervised`` (queries stopped at the end) as an
argument and never imports it (an imported fixture is an unused import to a linter, and the
argument that uses it a redefinition; it is also one more copy of the fixture, with its own cache,
in every module that imports it). The helpers beside them (``read_topic``, ``consume`` ...) are
imported as usual."""
from tests.integration.kafka_fixtures import kafka_bootstrap, own_kafka, topic_prefix
from tests.integration.registry_fixtures import registry_url
from tests.integration.spark_fixtures import delta, spark, supervised

__all__ = ["delta", "kafka_bootstrap", "own_kafka", "registry_url", "spark", "supervised", "topic_prefix"]
