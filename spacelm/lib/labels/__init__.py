"""Labels from an assessor of measured standing: the store, blind batches, standing."""
