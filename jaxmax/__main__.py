"""``python -m jaxmax``: a short tour that runs and checks every operator (see ``--help``);
``python -m jaxmax check MODEL``: check a model's max-family nodes against jaxmax (see
``python -m jaxmax check --help``); ``python -m jaxmax --version``: the version."""

import sys

if __name__ == "__main__":
    if sys.argv[1:] == ["--version"]:
        from jaxmax import __version__

        print(f"jaxmax {__version__}")
        raise SystemExit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "check":
        from jaxmax._src.check.cli import main as check_main

        raise SystemExit(check_main(sys.argv[2:]))

    from jaxmax._src.tour.runner import main

    raise SystemExit(main())
