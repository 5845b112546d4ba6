"""Single message transforms: Kafka Connect's and Debezium's SMTs applied to ChangeEvents.

``TransformChain.from_properties(props)`` reads the same ``transforms=`` / ``predicates=``
properties a Kafka Connect or Debezium Server configuration has; transforms and predicates are
found by their Java class names in the ``cdc.transforms`` entry point group.
"""
from cdc.transforms.chain import Options, Predicate, Transformation, TransformChain

__all__ = ["Options", "Predicate", "TransformChain", "Transformation"]
