"""``python -m jaxmax``: a short tour that runs and checks every operator (see ``--help``)."""

if __name__ == "__main__":
    from jaxmax._src.tour.runner import main

    raise SystemExit(main())
