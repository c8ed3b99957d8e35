"""``python -m jaxmax``: the tour of every operator (``runner``) and the expected values it is
checked against, computed without jaxmax (``references``)."""
