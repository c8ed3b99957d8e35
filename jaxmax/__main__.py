"""``python -m jaxmax``: a short tour that runs and checks every operator (see ``--help``);
``python -m jaxmax check MODEL``: check a model's max-family nodes against jaxmax (see
``python -m jaxmax check --help``)."""

import sys

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "check":
        from jaxmax._src.check.cli import main as check_main

        raise SystemExit(check_main(sys.argv[2:]))

    from jaxmax._src.tour.runner import main

    raise SystemExit(main())
