"""``python -m jaxmax check MODEL``: the model checker (see ``cli.py``)."""
